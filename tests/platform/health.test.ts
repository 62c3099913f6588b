import { describe, expect, test } from "bun:test";
import { buildApp } from "../../app";
import { loadConfig } from "../../modules/platform/config";
import { connectDatabase, type Database } from "../../modules/platform/database";
import { createLogger } from "../../modules/platform/logger";
import { createServices } from "../../services";
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

describe("/readyz answers 503 when a check fails", () => {
  // The app's HTTP surface over a database and worker state each case controls.
  async function readyz(options: {
    workerRunning: boolean;
    prepare?(database: Database): Promise<void | (() => Promise<void>)>;
  }): Promise<{ status: number; body: unknown }> {
    const config = loadConfig({
      DATABASE_URL: app.database.url,
      DATA_DIR: app.config.dataDir,
      SECRET_KEY: app.config.secretKey,
      LOG_LEVEL: "silent",
    });
    const database = connectDatabase(app.database.url, 2);
    const server = buildApp({
      ...createServices(config, database, createLogger("silent")),
      workerRunning: () => options.workerRunning,
    }).listen({ port: 0, hostname: "127.0.0.1" });
    let restore: void | (() => Promise<void>) | undefined;
    try {
      restore = await options.prepare?.(database);
      const response = await fetch(`http://127.0.0.1:${server.server!.port}/readyz`);
      return { status: response.status, body: await response.json() };
    } finally {
      await restore?.();
      await server.stop(true);
      await database.close();
    }
  }

  test.each([
    ["the job runner is not running", false, undefined, { database: true, migrations: true, worker: false }],
    [
      "the database pool is closed (unreachable)",
      true,
      (database: Database) => database.close(),
      { database: false, migrations: false, worker: true },
    ],
    [
      "a migration is not applied",
      true,
      async (database: Database) => {
        // This file's own database: forget the newest migration while the request runs, then restore it.
        const [newest] = await database.sql`
          delete from drizzle.__drizzle_migrations
          where id = (select max(id) from drizzle.__drizzle_migrations) returning *`;
        return async () => {
          await database.sql`insert into drizzle.__drizzle_migrations ${database.sql(newest!)}`;
        };
      },
      { database: true, migrations: false, worker: true },
    ],
  ] as const)("%s", async (_name, workerRunning, prepare, checks) => {
    const result = await readyz({ workerRunning, prepare });
    const ready = checks.database && checks.migrations && checks.worker;
    expect(result).toEqual({
      status: ready ? 200 : 503,
      body: { status: ready ? "ready" : "not_ready", role: "all", checks },
    });
  });
});
