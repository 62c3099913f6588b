import { describe, expect, test } from "bun:test";
import { startTestApp } from "../helpers/app";

const app = await startTestApp();

describe("health", () => {
  test("/healthz answers while the process lives", async () => {
    const response = await app.fetch("/healthz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  test("/readyz reports database, migrations and worker", async () => {
    const response = await app.fetch("/readyz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: "ready",
      role: "all",
      checks: { database: true, migrations: true, worker: true },
    });
  });
});
