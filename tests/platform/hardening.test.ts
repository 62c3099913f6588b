// Findings of the black-box probe (issue #13 §2–§5) at the platform's edge: text PostgreSQL cannot
// store, the sign-in redirect, secrets in logs, and security headers.
import { describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { buildApp } from "../../app";
import { createLogger } from "../../modules/platform/logger";
import { createServices } from "../../services";
import { safeNext } from "../../ui/page";
import { mac } from "../console/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser } from "../helpers/browser";

const app = await startTestApp();

function register(body: Record<string, unknown>) {
  return app.fetch("/api/v1/devices/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ mac_address: mac(), ...body }),
  });
}

describe("text PostgreSQL cannot store is refused at the edge, never a 500", () => {
  test.each([
    ["NUL in a JSON string", { product_name: "pump\u0000" }, "product_name"],
    ["a lone surrogate in a JSON string", { product_name: "pump\ud800" }, "product_name"],
    ["NUL in a nested value", { metadata: { site: "a\u0000b" } }, "metadata.site"],
    ["NUL in an object key", { metadata: { "k\u0000": "v" } }, "metadata"],
  ])("%s: 400 invalid_text naming the field", async (_name, body, field) => {
    const response = await register(body);
    expect(response.status).toBe(400);
    expect((await response.json()).error).toMatchObject({ code: "invalid_text", details: { field } });
  });

  test.each([
    ["NUL", String.raw`{"telemetry":{"scripts":{"x":"a\u0000b"}}}`, "telemetry.scripts.x"],
    [
      "an upper-case lone surrogate",
      String.raw`{"telemetry":{"scripts":{"x":"\uDA00"}}}`,
      "telemetry.scripts.x",
    ],
    [
      "a lone low surrogate after a pair",
      String.raw`{"telemetry":{"a":"\ud83d\ude00","b":"\udc00"}}`,
      "telemetry.b",
    ],
    ["NUL in a key", String.raw`{"telemetry":{"k\u0000":1}}`, "telemetry"],
  ])(
    "a JSON body read as text (the heartbeat) with %s: 400 invalid_text naming the field",
    async (_name, text, field) => {
      const response = await app.fetch(`/api/v1/devices/${crypto.randomUUID()}/heartbeat?api_key=k`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: text,
      });
      expect(response.status).toBe(400);
      expect((await response.json()).error).toMatchObject({ code: "invalid_text", details: { field } });
    },
  );

  test("storable text that only looks suspect passes: an escaped backslash before u0000, a surrogate pair", async () => {
    const response = await app.fetch(`/api/v1/devices/${crypto.randomUUID()}/heartbeat?api_key=k`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: String.raw`{"telemetry":{"scripts":{"x":"\\u0000 \ud83d\ude00 ✓"}}}`,
    });
    expect((await response.json()).error.code).toBe("device_not_found"); // past the text check
  });

  test("query parameters and path segments: typed 400 on the API, an error page in the console", async () => {
    const token = await app.token("viewer");
    const auth = { headers: { authorization: `Bearer ${token}` } };
    const api = await app.fetch("/api/v1/devices?search=%00", auth);
    expect(api.status).toBe(400);
    expect((await api.json()).error).toMatchObject({ code: "invalid_text", details: { field: "search" } });
    const path = await app.fetch("/api/v1/devices/%00", auth);
    expect(path.status).toBe(400);
    const malformed = await app.fetch("/api/v1/devices/%ED%A0%80", auth);
    expect(malformed.status).toBe(400);
    const { cookie } = await app.session("viewer");
    const page = await app.fetch("/devices?search=%00", { headers: { cookie } });
    expect(page.status).toBe(400);
    expect(page.headers.get("content-type")).toContain("text/html");
  });

  // checkUrlText skips URLs without `%`: it relies on what Bun makes of raw bytes in the request line.
  test("raw bytes in the request line: control characters refused, other bytes percent-encoded", async () => {
    const token = await app.token("viewer");
    const requestLine = async (target: Buffer) => {
      const { port } = new URL(app.url);
      const head = Buffer.from(
        `HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      );
      const text = await new Promise<string>((resolve, reject) => {
        const chunks: Buffer[] = [];
        const socket = connect(Number(port), "127.0.0.1", () =>
          socket.write(Buffer.concat([Buffer.from("GET "), target, Buffer.from(" "), head])),
        );
        socket.setTimeout(5000, () => socket.destroy(new Error("no answer in 5 s")));
        socket.on("data", (chunk: Buffer) => chunks.push(chunk));
        socket.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
        socket.on("error", reject);
      });
      return Number(text.split(" ")[1]);
    };
    for (const control of ["\u0000", "\u0001", "\u001f"])
      expect(
        await requestLine(Buffer.from(`/api/v1/devices?search=a${control}b`, "latin1")),
      ).toBeGreaterThanOrEqual(400);
    // The bytes of a lone surrogate in UTF-8 (ED A0 80) arrive as U+FFFD each, storable: the search runs.
    const lone = Buffer.concat([Buffer.from("/api/v1/devices?search=a"), Buffer.from([0xed, 0xa0, 0x80])]);
    expect(await requestLine(lone)).toBe(200);
  });

  test("nothing was stored by the refused registrations", async () => {
    const [row] = await app.database.sql<{ n: number }[]>`
      select count(*)::int as n from devices where product_name like 'pump%'`;
    expect(row!.n).toBe(0);
  });
});

describe("sign-in redirect stays on the console", () => {
  test.each([
    ["/devices?status=pending#top", "/devices?status=pending#top"],
    ["/\t/evil.example", "/"],
    ["/\r\n/evil.example", "/"],
    ["/\\evil.example", "/"],
    ["\\\\evil.example", "/"],
    ["//evil.example", "/"],
    ["/%2F%2Fevil.example", "/%2F%2Fevil.example"],
    ["https://evil.example/", "/"],
    ["javascript:alert(1)", "/"],
    ["/ok/../../x", "/x"],
    ["", "/"],
  ])("next=%p → %p", (next, expected) => {
    expect(safeNext(next)).toBe(expected);
  });

  test("a real sign-in with next=/<tab>/evil.example lands on the console in Chromium", async () => {
    const { email } = await app.session("operator");
    const password = "correct horse battery"; // what app.session() gives every operator
    const page = await (await launchBrowser()).newPage();
    await page.goto(`${app.url}/login?next=${encodeURIComponent("/\t/evil.example")}`);
    await page.fill('input[name="email"]', email);
    await page.fill('input[name="password"]', password);
    await page.click('button[type="submit"]');
    await page.waitForLoadState("load");
    expect(new URL(page.url()).origin).toBe(app.url);
    await page.close();
  });
});

describe("secrets stay out of logs", () => {
  test("access log, error log and messages redact api_key, tokens and credentials", async () => {
    const lines: string[] = [];
    const logger = createLogger("debug", {}, "json", { write: (line: string) => void lines.push(line) });
    const probe = buildApp({
      ...createServices(app.config, app.database, logger),
      workerRunning: () => true,
    }).get("/api/v1/boom", ({ request }) => {
      logger.warn(`retrying ${request.url}`);
      throw new Error(`upstream failed for ${request.url}`);
    });
    await probe.handle(new Request("http://localhost/api/v1/devices/heartbeat?api_key=SECRET-KEY-1"));
    await probe.handle(new Request("http://localhost/api/v1/boom?api_key=SECRET-KEY-2&ticket=SECRET-TICKET"));
    logger.info({
      headers: { authorization: "Bearer SECRET-BEARER", cookie: "outpost_session=SECRET-COOKIE" },
    });
    await Bun.sleep(50); // the access log is written after the response
    const log = lines.join("");
    expect(log).toContain("api_key=[redacted]");
    expect(log).toContain('"msg":"unhandled error"');
    expect(log).not.toMatch(/SECRET-/);
  });
});

describe("security headers", () => {
  test("pages, API answers and errors carry CSP, frame and sniffing protection", async () => {
    const { cookie } = await app.session("viewer");
    for (const [path, init] of [
      ["/login", {}],
      ["/devices", { headers: { cookie } }],
      ["/api/v1/devices", { headers: { cookie } }],
      ["/no-such-page", { headers: { cookie } }],
      ["/assets/app.css", {}],
    ] as const) {
      const response = await app.fetch(path, init);
      expect({ path, csp: response.headers.get("content-security-policy") }).toEqual({
        path,
        csp: expect.stringContaining("frame-ancestors 'none'"),
      });
      expect(response.headers.get("content-security-policy")).toContain("script-src 'self';");
      // Forms may lead only here and to the devices' own hostnames (Open web UI).
      expect(response.headers.get("content-security-policy")).toContain(
        `form-action 'self' *.${app.config.baseDomain}:*;`,
      );
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("referrer-policy")).toBe("same-origin");
      expect(response.headers.get("strict-transport-security")).toBeNull();
    }
  });

  test("Strict-Transport-Security when BASE_URL is https", async () => {
    const probe = buildApp({
      ...createServices(
        { ...app.config, baseUrl: "https://outpost.example" },
        app.database,
        createLogger("silent"),
      ),
      workerRunning: () => true,
    });
    const response = await probe.handle(new Request("http://localhost/login"));
    expect(response.headers.get("strict-transport-security")).toBe("max-age=31536000; includeSubDomains");
  });
});
