import { readFileSync } from "node:fs";
import path from "node:path";
import { type AnyElysia, Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { openApiDocument } from "./document";

const ROOT = path.resolve(import.meta.dir, "../..");
export const VERSION = (
  JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }
).version;
const SWAGGER = path.join(ROOT, "node_modules/swagger-ui-dist");

const ASSETS: Record<string, { file: string; type: string }> = {
  "swagger-ui.css": { file: path.join(SWAGGER, "swagger-ui.css"), type: "text/css; charset=utf-8" },
  "swagger-ui-bundle.js": {
    file: path.join(SWAGGER, "swagger-ui-bundle.js"),
    type: "text/javascript; charset=utf-8",
  },
  "init.js": { file: path.join(import.meta.dir, "static/init.js"), type: "text/javascript; charset=utf-8" },
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Outpost API reference</title>
<link rel="stylesheet" href="/api/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/api/docs/swagger-ui-bundle.js"></script>
<script src="/api/docs/init.js"></script>
</body>
</html>`;

/**
 * `GET /api/openapi.json` (the document) and `GET /api/docs` (Swagger UI from the project's own
 * npm packages). Public: the API's shape is not a secret (every call in it still needs its
 * credentials). `app` is the whole app, read when the document is first asked for.
 */
export function openApiRoutes(
  ctx: AppContext,
  app: () => AnyElysia,
  options: { e2eProtocolVersions: readonly string[] },
) {
  let document: string | undefined;
  return new Elysia({ name: "openapi" })
    .use(ctx.access)
    .get(
      "/api/openapi.json",
      () => {
        document ??= JSON.stringify(
          openApiDocument(app(), { version: VERSION, e2eProtocolVersions: options.e2eProtocolVersions }),
        );
        return new Response(document, { headers: { "content-type": "application/json" } });
      },
      { access: "public" },
    )
    .get("/api/docs", () => new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } }), {
      access: "public",
    })
    .get(
      "/api/docs/:asset",
      ({ params }) => {
        const asset = ASSETS[params.asset];
        if (!asset) return new Response("not found\n", { status: 404 });
        return new Response(Bun.file(asset.file), {
          headers: { "content-type": asset.type, "cache-control": "public, max-age=3600" },
        });
      },
      { access: "public" },
    );
}
