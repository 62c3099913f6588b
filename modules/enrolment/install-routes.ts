import { readFileSync } from "node:fs";
import path from "node:path";
import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { resolveDownload, sha256Of } from "./downloads";

const SCRIPT = path.join(import.meta.dir, "install.sh");

const notBuilt = (name: string) =>
  new AppError(
    404,
    "download_not_found",
    `${name} is not available on this server: on the server, in Outpost's directory, run npm run build:agent (no restart needed)`,
  );

/**
 * `GET /install.sh` (public): the installer with this server's address in it. `GET /downloads/<name>`
 * (public): the agent for each architecture, its Debian package, their `.sha256` files
 * (sha256sum format) and the systemd unit. Nothing secret is served: the enrolment token is the key.
 * Their errors answer JSON (`isApiPath`): install.sh prints the message.
 */
export function installRoutes(ctx: AppContext) {
  const dist = ctx.config.agentDistDir;
  return new Elysia({ name: "install" })
    .use(ctx.access)
    .get(
      "/install.sh",
      () =>
        new Response(readFileSync(SCRIPT, "utf8").replaceAll("__OUTPOST_URL__", ctx.config.baseUrl), {
          headers: { "content-type": "text/x-shellscript; charset=utf-8", "cache-control": "no-store" },
        }),
      { access: "public" },
    )
    .get(
      "/downloads/:name",
      ({ params }) => {
        const name = params.name;
        const checksum = name.endsWith(".sha256");
        const target = checksum ? name.slice(0, -".sha256".length) : name;
        const file = resolveDownload(dist, target);
        if (!file) throw notBuilt(target);
        if (checksum) {
          return new Response(`${sha256Of(file)}  ${target}\n`, {
            headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" },
          });
        }
        return new Response(Bun.file(file), {
          headers: {
            "content-type": name.endsWith(".service")
              ? "text/plain; charset=utf-8"
              : "application/octet-stream",
            "content-disposition": `attachment; filename="${target}"`,
            "cache-control": "no-store",
          },
        });
      },
      { access: "public" },
    );
}
