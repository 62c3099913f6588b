import { describe, expect, test } from "bun:test";
import { buildApp } from "../../app";
import { createLogger } from "../../modules/platform/logger";
import { createServices } from "../../services";
import { startTestApp } from "../helpers/app";

const app = await startTestApp();

describe("errors", () => {
  test("unknown API path: JSON 404 with a request id", async () => {
    const response = await app.fetch("/api/v1/nothing-here");
    expect(response.status).toBe(404);
    expect(response.headers.get("x-request-id")).toMatch(/^[\w-]{8,}$/);
    expect(await response.json()).toEqual({
      error: { code: "not_found", message: "There is nothing at this address." },
    });
  });

  test("unknown page: an HTML 404 page", async () => {
    const response = await app.fetch("/no/such/page");
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toContain("text/html");
    expect(await response.text()).toContain("Page not found");
  });

  test("a given request id is echoed; a malformed one is replaced", async () => {
    const echoed = await app.fetch("/healthz", { headers: { "x-request-id": "lb-1234" } });
    expect(echoed.headers.get("x-request-id")).toBe("lb-1234");
    const replaced = await app.fetch("/healthz", { headers: { "x-request-id": "<script>" } });
    expect(replaced.headers.get("x-request-id")).not.toBe("<script>");
  });

  test("malformed JSON is a typed 400", async () => {
    const token = await app.token("admin");
    const response = await app.fetch("/api/v1/jobs/prune_sessions/run", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: "{not json",
    });
    expect(response.status).toBe(400);
    expect((await response.json()).error.code).toBe("invalid_json");
  });

  test("an unexpected failure is a generic 500 that leaks nothing", async () => {
    const lines: string[] = [];
    const logger = createLogger("error");
    const captured = logger.child({});
    captured.error = ((obj: unknown) => lines.push(JSON.stringify(obj))) as typeof captured.error;
    const probe = buildApp({
      ...createServices(app.config, app.database, captured),
      workerRunning: () => true,
    })
      .get("/api/v1/boom", () => {
        throw new Error("password=hunter2 at /srv/secret.ts:42");
      })
      .get("/boom", () => {
        throw new Error("select * from secrets");
      });
    const api = await probe.handle(new Request("http://localhost/api/v1/boom"));
    expect(api.status).toBe(500);
    const body = await api.json();
    expect(body.error.code).toBe("internal_error");
    expect(JSON.stringify(body)).not.toContain("hunter2");
    const page = await probe.handle(new Request("http://localhost/boom"));
    expect(page.status).toBe(500);
    const html = await page.text();
    expect(html).toContain("Something went wrong");
    expect(html).not.toContain("secrets");
    expect(html).toContain(page.headers.get("x-request-id")!);
  });

  test("a body over the global limit is refused with 413", async () => {
    const token = await app.token("admin");
    const response = await app.fetch("/api/v1/jobs/prune_sessions/run", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ padding: "x".repeat(17 * 1024 * 1024) }),
    });
    expect(response.status).toBe(413);
  });
});
