import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";

const REPO = path.resolve(import.meta.dir, "../..");
const SCRIPT = path.join(import.meta.dir, "install.sh");
const UNIT = path.join(REPO, "deploy/outpost-agent.service");

/** What /downloads serves: the builds of `npm run build:agent` (binaries, packages) and the unit. */
const BINARY = /^outpost-agent-linux-(x64|arm64)$/;
const PACKAGE = /^outpost-agent_(amd64|arm64)\.deb$/;

/** The file behind a download name, or undefined (unknown name, or not built on this server). */
function resolveDownload(dist: string, name: string): string | undefined {
  if (name === "outpost-agent.service") return UNIT;
  if (BINARY.test(name)) return existsSync(path.join(dist, name)) ? path.join(dist, name) : undefined;
  const debarch = PACKAGE.exec(name)?.[1];
  if (!debarch || !existsSync(dist)) return undefined;
  // The newest package of that architecture (packages carry their version in their file name).
  const candidates = readdirSync(dist)
    .filter((f) => f.startsWith("outpost-agent_") && f.endsWith(`_${debarch}.deb`))
    .map((f) => path.join(dist, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return candidates[0];
}

const digests = new Map<string, { mtimeMs: number; hex: string }>();

/** SHA-256 of a file, remembered until the file changes. */
function sha256Of(file: string): string {
  const { mtimeMs } = statSync(file);
  const known = digests.get(file);
  if (known?.mtimeMs === mtimeMs) return known.hex;
  const hex = createHash("sha256").update(readFileSync(file)).digest("hex");
  digests.set(file, { mtimeMs, hex });
  return hex;
}

const notBuilt = (name: string) =>
  new AppError(
    404,
    "download_not_found",
    `${name} is not available on this server: build it with npm run build:agent`,
  );

/**
 * `GET /install.sh` (public): the installer with this server's address in it. `GET /downloads/<name>`
 * (public): the agent for each architecture, its Debian package, their `.sha256` files
 * (sha256sum format) and the systemd unit. Nothing secret is served: the enrolment token is the key.
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
