// Every route of the app, taken from its route table (a new route is covered without touching this
// file), gets a corpus of bad input with each kind of credentials. Nothing may answer 5xx or hang.
import { describe, expect, test } from "bun:test";
import { buildApp } from "../../app";
import { createLogger } from "../../modules/platform/logger";
import { createServices } from "../../services";
import { approvedDevice } from "../devices/helpers";
import { runnerHeaders, startE2EApp, writeE2EFixture } from "../e2e/fixtures";

const app = await startE2EApp(writeE2EFixture());
const routes = buildApp({
  ...createServices(app.config, app.database, createLogger("silent")),
  workerRunning: () => true,
})
  .routes.map((route) => ({ method: route.method, path: route.path }))
  .filter((route) => route.method !== "WS" && route.path !== "/logout");

const TEN_MB = "x".repeat(10 * 1024 * 1024);
const DEEP = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
const FIELDS = [
  "name",
  "product_name",
  "mac_address",
  "search",
  "suite_id",
  "idempotency_key",
  "type",
  "email",
];
const each = (value: unknown) => Object.fromEntries(FIELDS.map((field) => [field, value]));

const BODIES: { name: string; type?: string; body: string }[] = [
  { name: "NUL strings", type: "application/json", body: JSON.stringify(each("a\u0000b")) },
  { name: "lone surrogates", type: "application/json", body: JSON.stringify(each("a\ud800b")) },
  { name: "10k-deep nesting", type: "application/json", body: DEEP },
  { name: "1e309", type: "application/json", body: `{"limit":1e309,"ttl_seconds":1e309,"count":-1e309}` },
  {
    name: "wrong types",
    type: "application/json",
    body: JSON.stringify({ ...each([1, { a: null }]), results: "x" }),
  },
  { name: "a JSON list", type: "application/json", body: "[1,2,3]" },
  { name: "broken JSON", type: "application/json", body: '{"a":' },
  { name: "empty", type: "application/json", body: "" },
  { name: "text/plain", type: "text/plain", body: "hello" },
  { name: "form with NUL", type: "application/x-www-form-urlencoded", body: "name=%00&email=%00&_csrf=x" },
  { name: "bad multipart", type: "multipart/form-data; boundary=zz", body: "--zz\r\nbroken" },
  { name: "no content type", body: "{}" },
];
/** A body most routes would accept, so a bad value in one field travels as deep as it can. */
const PLAUSIBLE = {
  mac_address: "06:C0:00:00:00:01",
  product_name: "pump",
  name: "probe",
  type: "list_scripts",
  suite_id: "smoke",
  environment_label: "staging",
  idempotency_key: "k-1",
  telemetry: { device: { cpu: 1 }, scripts: {}, meta: { schema_definition: { product: "pump" } } },
  results: [{ command_id: "00000000-0000-4000-8000-000000000000", status: "OK" }],
};
for (const field of Object.keys(PLAUSIBLE)) {
  for (const [what, bad] of [
    ["NUL", "a\u0000b"],
    ["a lone surrogate", "a\ud800b"],
  ]) {
    BODIES.push({
      name: `${what} in ${field} of a plausible body`,
      type: "application/json",
      body: JSON.stringify({ ...PLAUSIBLE, [field]: bad }),
    });
  }
}
/**
 * Headers a browser or a stranger may send with any request: cookies that do not decode (a site under the
 * same parent domain can set any cookie: issue 41) and credentials that are not what they claim.
 */
const MALFORMED = ["%zz", "%E0%A4%A", "%ED%A0%80", "%00", "\u00ff\u00fe"];
const HEADERS: { name: string; headers: Record<string, string> }[] = [
  ...MALFORMED.flatMap((value) => [
    { name: `session cookie ${value}`, headers: { cookie: `outpost_session=${value}` } },
    { name: `csrf cookie ${value}`, headers: { cookie: `outpost_csrf=${value}; outpost_flash=${value}` } },
    {
      name: `__Host- cookies ${value}`,
      headers: {
        cookie: `__Host-outpost_session=${value}; __Host-outpost_csrf=${value}; __Host-outpost_flash=${value}`,
      },
    },
  ]),
  { name: "cookie without a value", headers: { cookie: "outpost_session; =; ;;" } },
  { name: "bearer %zz", headers: { authorization: "Bearer %zz" } },
  { name: "empty bearer", headers: { authorization: "Bearer " } },
  { name: "csrf header %zz", headers: { "x-csrf-token": "%zz", "hx-request": "true" } },
  { name: "bad request id", headers: { "x-request-id": "%ED%A0%80\u00ff" } },
  { name: "runner id %zz", headers: { "x-e2e-runner-id": "%zz", "x-forwarded-for": "%zz, ::1, 999.1.1.1" } },
];
const PARAMS = ["%00", "%ED%A0%80", "x".repeat(300), "..%2F..%2Fetc", "00000000-0000-4000-8000-000000000000"];
const QUERY = "?search=%00&limit=1e309&sort=%ff&page=-1&status=&fragment=x&after=%00";

async function send(method: string, url: string, headers: Record<string, string>, body?: string) {
  const started = Date.now();
  const response = await app.fetch(url, { method, headers, body, signal: AbortSignal.timeout(5_000) });
  await response.body?.cancel(); // live streams (SSE) stay open by design: the head is what counts
  return { status: response.status, ms: Date.now() - started };
}

function concrete(path: string, value: string) {
  return path.replace(/:(\w+)/g, () => value);
}

describe("bad input on every route", async () => {
  const device = await approvedDevice(app);
  const admin = await app.token("admin");
  const credentials: Record<string, (path: string) => { headers: Record<string, string>; query: string }> = {
    anonymous: () => ({ headers: {}, query: "" }),
    admin: () => ({ headers: { authorization: `Bearer ${admin}` }, query: "" }),
    "device key": () => ({ headers: {}, query: `api_key=${device.token}` }),
    "e2e runner": () => ({ headers: runnerHeaders(), query: "" }),
  };

  test("the route table is walked", () => {
    expect(routes.length).toBeGreaterThan(40);
  });

  for (const route of routes) {
    test(`${route.method} ${route.path}: no 5xx, no hang`, async () => {
      const failures: string[] = [];
      const check = (what: string, result: { status: number; ms: number }) => {
        if (result.status >= 500 || result.ms >= 5_000)
          failures.push(`${what}: ${result.status} in ${result.ms} ms`);
      };
      for (const [who, credential] of Object.entries(credentials)) {
        const { headers, query } = credential(route.path);
        const join = (url: string, extra: string) =>
          extra ? `${url}${url.includes("?") ? "&" : "?"}${extra}` : url;
        const params = route.path.includes(":") ? PARAMS : [""];
        for (const param of params) {
          const url = join(`${concrete(route.path, param)}${QUERY}`, query);
          check(
            `${who} param=${param.slice(0, 20)}`,
            await send(route.method, url, headers, route.method === "GET" ? undefined : "{}"),
          );
        }
        const url = join(concrete(route.path, PARAMS[4]!), query);
        if (who === "anonymous") {
          const body = route.method === "GET" ? undefined : "{}";
          for (const extra of HEADERS) {
            const withType = body ? { ...extra.headers, "content-type": "application/json" } : extra.headers;
            check(`${who} ${extra.name}`, await send(route.method, url, withType, body));
          }
        }
        if (route.method === "GET" || route.method === "HEAD") continue;
        for (const body of BODIES) {
          const withType = body.type ? { ...headers, "content-type": body.type } : headers;
          check(`${who} ${body.name}`, await send(route.method, url, withType, body.body));
        }
        if (who === "admin") {
          const big = { ...headers, "content-type": "application/json" };
          check(`${who} 10 MB string`, await send(route.method, url, big, JSON.stringify({ name: TEN_MB })));
        }
      }
      expect(failures).toEqual([]);
    }, 60_000);
  }
});
