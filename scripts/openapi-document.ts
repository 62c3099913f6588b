/**
 * Writes the OpenAPI document the server serves at /api/openapi.json (built from the app's route table,
 * without a database or a listening port) to the file given, for `npm run check:openapi` (redocly lint).
 * Usage: bun scripts/openapi-document.ts <out.json>
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { buildApp } from "../app";
import { E2E_DEFAULTS } from "../modules/e2e/config";
import { openApiDocument } from "../modules/openapi/document";
import { VERSION } from "../modules/openapi/routes";
import { loadConfig } from "../modules/platform/config";
import { connectDatabase } from "../modules/platform/database";
import { createLogger } from "../modules/platform/logger";
import { createServices } from "../services";

const out = process.argv[2];
if (!out) {
  console.error("usage: bun scripts/openapi-document.ts <out.json>");
  process.exit(2);
}
// Routes are declared without touching the database: a client that never connects is enough.
const database = connectDatabase("postgres://outpost@127.0.0.1:1/none");
const app = buildApp({
  ...createServices(
    loadConfig({ SECRET_KEY: "k".repeat(32), DATA_DIR: "/nonexistent" }),
    database,
    createLogger("silent"),
  ),
  workerRunning: () => false,
});
const document = openApiDocument(app, {
  version: VERSION,
  e2eProtocolVersions: E2E_DEFAULTS.protocolVersions,
});
// A fresh clone has no artifacts/ folder (it is not committed).
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
await database.sql.end({ timeout: 0 });
