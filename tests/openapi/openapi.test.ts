// The OpenAPI document: valid for a real validator, complete (every API route of the app's route
// table is in it, with who may call it), and true (real responses match their documented schemas);
// its reference page works in Chromium under the console's CSP.
import { afterAll, describe, expect, test } from "bun:test";
import { validate } from "@readme/openapi-parser";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { buildApp } from "../../app";
import { approveDevices } from "../../modules/devices/service";
import { API_PATH } from "../../modules/openapi/document";
import { createLogger } from "../../modules/platform/logger";
import { createServices } from "../../services";
import { json, newMac, sampleHeartbeat } from "../devices/helpers";
import { startE2EApp, writeE2EFixture } from "../e2e/fixtures";
import { launchBrowser, screenshot } from "../helpers/browser";

const app = await startE2EApp(writeE2EFixture());
afterAll(() => app.stop());
const browser = await launchBrowser();

// biome-ignore lint/suspicious/noExplicitAny: the document is checked by the validator and assertions
type Doc = any;
const response = await app.fetch("/api/openapi.json");
const doc: Doc = await response.json();

describe("the document", () => {
  test("is served as JSON and passes a real OpenAPI 3.1 validator", async () => {
    expect(response.status).toBe(200);
    expect(doc.openapi).toStartWith("3.1.");
    const result = await validate(structuredClone(doc));
    expect({ valid: result.valid, errors: result.valid ? [] : result.errors }).toEqual({
      valid: true,
      errors: [],
    });
  });

  test("lists every API route of the app, with who may call it", () => {
    const routes = buildApp({
      ...createServices(app.config, app.database, createLogger("silent")),
      workerRunning: () => true,
    })
      .routes.filter(
        (route) => API_PATH.test(route.path) && !["WS", "OPTIONS", "HEAD"].includes(route.method),
      )
      .map((route) => `${route.method.toLowerCase()} ${route.path.replace(/:(\w+)/g, "{$1}")}`);
    expect(routes.length).toBeGreaterThan(40);
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item as object).map((method) => `${method} ${path}`),
    );
    expect(routes.filter((route) => !documented.includes(route))).toEqual([]);
    expect(doc.paths["/api/v1/devices/{device_id}/heartbeat"].post.security).toEqual([{ deviceApiKey: [] }]);
    expect(doc.paths["/api/v1/devices/register"].post.security).toEqual([]);
    expect(doc.paths["/api/v1/devices/approval"].post.security).toEqual([{ apiToken: [] }]);
    expect(doc.paths["/api/v1/devices/approval"].post["x-outpost-access"]).toBe("operator");
    expect(doc.paths["/e2e/runs"].post.security).toEqual([{ e2eRunnerId: [], e2eRunnerToken: [] }]);
    expect(doc.tags.find((tag: { name: string }) => tag.name === "E2E")["x-api-version"]).toBe("1.0.0");
    // The protocol version the server accepts is `1` (the header's value), not the description's 1.0.0.
    expect(doc.info.description).toContain("accepts `1`");
    expect(doc.components.securitySchemes.deviceApiKey).toEqual(
      expect.objectContaining({ type: "apiKey", in: "query", name: "api_key" }),
    );
    // Error shapes and a device API example.
    expect(
      doc.paths["/api/v1/devices/register"].post.responses[400].content["application/json"].schema.$ref,
    ).toBe("#/components/schemas/Error");
    const registerBody = doc.paths["/api/v1/devices/register"].post.requestBody.content;
    expect(Object.values(registerBody).some((media) => (media as { example?: unknown }).example)).toBe(true);
  });

  test("every example in the document is valid for the schema it stands in, and the device and E2E APIs have them", () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ components: doc.components }, "openapi.json");
    const resolve = (schema: object) =>
      JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/'));
    const invalid: { at: string; errors: unknown }[] = [];
    let checked = 0;
    const walk = (node: unknown, at: string) => {
      if (Array.isArray(node)) {
        for (const [i, item] of node.entries()) walk(item, `${at}/${i}`);
        return;
      }
      if (typeof node !== "object" || node === null) return;
      const record = node as Record<string, unknown>;
      // A schema's `examples`, and a media type's `example` for its `schema`.
      if (Array.isArray(record.examples) && (record.type || record.properties || record.anyOf)) {
        const { examples, ...schema } = record;
        for (const example of examples as unknown[]) {
          checked++;
          if (!ajv.validate(resolve(schema), example)) invalid.push({ at, errors: ajv.errors });
        }
      }
      if ("example" in record && record.schema && typeof record.schema === "object") {
        checked++;
        if (!ajv.validate(resolve(record.schema), record.example)) invalid.push({ at, errors: ajv.errors });
      }
      for (const [key, value] of Object.entries(record)) if (key !== "examples") walk(value, `${at}/${key}`);
    };
    walk(doc.paths, "#/paths");
    walk(doc.components, "#/components");
    expect(invalid).toEqual([]);
    expect(checked).toBeGreaterThan(10);
    // The agent's calls and the CI runner's, beyond the bodies: the replies they read have examples too.
    for (const [path, method] of [
      ["/api/v1/devices/{device_id}/wait", "get"],
      ["/api/v1/devices/{device_id}/command_payloads/{ref}", "get"],
      ["/e2e/runs", "get"],
      ["/e2e/runs/{runId}/results", "get"],
    ] as const)
      expect({
        path,
        example: JSON.stringify(doc.paths[path][method].responses[200]).includes('"example'),
      }).toEqual({
        path,
        example: true,
      });
  });

  test("real replies match their documented schemas", async () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    const schemaOf = (path: string, method: string, status: number) => {
      const content = doc.paths[path][method].responses[status].content;
      return (Object.values(content)[0] as { schema: object }).schema;
    };
    const check = (schema: object, body: unknown) => {
      const valid = ajv.validate(schema, body);
      return valid ? [] : ajv.errors;
    };
    const mac = newMac();
    const secret = "s".repeat(43);
    const first = await app.fetch(
      "/api/v1/devices/register",
      json({ mac_address: mac, device_secret: secret }),
    );
    const pending = await first.json();
    expect(check(schemaOf("/api/v1/devices/register", "post", 201), pending)).toEqual([]);
    await approveDevices(app.database.sql, [(pending as { data: { id: string } }).data.id]);
    const again = (await (
      await app.fetch("/api/v1/devices/register", json({ mac_address: mac, device_secret: secret }))
    ).json()) as {
      data: { id: string; api_token: string };
    };
    expect(check(schemaOf("/api/v1/devices/register", "post", 201), again)).toEqual([]);
    const beat = await app.fetch(
      `/api/v1/devices/${again.data.id}/heartbeat?api_key=${again.data.api_token}`,
      json(sampleHeartbeat()),
    );
    expect(check(schemaOf("/api/v1/devices/{device_id}/heartbeat", "post", 200), await beat.json())).toEqual(
      [],
    );
    // The agent's wait between polls: its reply, and its query parameters documented.
    const waited = await app.fetch(
      `/api/v1/devices/${again.data.id}/wait?api_key=${again.data.api_token}&timeout_s=1`,
    );
    expect(check(schemaOf("/api/v1/devices/{device_id}/wait", "get", 200), await waited.json())).toEqual([]);
    const waitParameters = (
      doc.paths["/api/v1/devices/{device_id}/wait"].get.parameters as { name: string }[]
    ).map((p) => p.name);
    expect(waitParameters).toEqual(
      expect.arrayContaining(["device_id", "api_key", "timeout_s", "remote_access"]),
    );
    // The audit API, with an event in it (an admin token's approval, recorded after its answer).
    const admin = await app.token("admin");
    const asAdmin = { authorization: `Bearer ${admin}`, "content-type": "application/json" };
    await app.fetch("/api/v1/devices/approval", {
      method: "POST",
      headers: asAdmin,
      body: JSON.stringify({ ids: [again.data.id], approval_status: "approved" }),
    });
    let audit: { data: unknown[] } = { data: [] };
    for (let i = 0; i < 50 && audit.data.length === 0; i++) {
      if (i > 0) await Bun.sleep(50);
      audit = (await (await app.fetch("/api/v1/audit?limit=5", { headers: asAdmin })).json()) as typeof audit;
    }
    expect(audit.data.length).toBeGreaterThan(0);
    // Its filters come from the route's own query schema.
    const auditParameters = (doc.paths["/api/v1/audit"].get.parameters as { name: string; in: string }[])
      .filter((p) => p.in === "query")
      .map((p) => p.name);
    expect(auditParameters.sort()).toEqual(["action", "actor", "cursor", "from", "limit", "target", "to"]);
    // The documented error shape, from a real refusal.
    const refused = await app.fetch("/api/v1/devices/register", json({ mac_address: "nope" }));
    expect(check(doc.components.schemas.Error, await refused.json())).toEqual([]);
  });
});

test("/api/docs shows the reference from the project's own files, under the CSP", async () => {
  const page = await browser.newPage();
  const refused: string[] = [];
  const external: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/.test(message.text())) refused.push(message.text());
  });
  page.on("request", (request) => {
    if (!request.url().startsWith(app.url)) external.push(request.url());
  });
  await page.goto(`${app.url}/api/docs`);
  await page
    .locator(".opblock-summary-path", { hasText: "/api/v1/devices/register" })
    .first()
    .waitFor({ timeout: 15_000 });
  expect(await page.locator(".opblock").count()).toBeGreaterThan(40);
  await screenshot(page, "api-docs");
  expect(refused).toEqual([]);
  expect(external).toEqual([]);
  await page.close();
}, 60_000);
