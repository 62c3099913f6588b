import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../modules/platform/config";
import { createTestDatabase } from "../helpers/database";
import { runOutpost, startOutpostProcess } from "../helpers/process";
import { tempDir } from "../helpers/temp";

const dataDir = tempDir("outpost-config-");

describe("configuration", () => {
  test("defaults follow the README table", () => {
    const config = loadConfig({ DATA_DIR: dataDir });
    expect(config).toMatchObject({
      port: 4000,
      host: "0.0.0.0",
      baseUrl: "http://localhost:4000",
      baseDomain: "localhost",
      databaseUrl: undefined,
      role: "all",
      logLevel: "info",
      tunnelSshPort: 7000,
      tunnelHttpPort: 8080,
      tunnelMuxPort: 2022,
      tunnelDataPort: 7001,
      remoteAccessPageGraceSeconds: 10,
      e2eEnabled: false,
      workerConcurrency: 5,
      sessionTtlHours: 12,
      deviceOnlineWindowSeconds: 300,
      deviceHeartbeatRateLimit: 30,
      deviceRegisterRateLimit: 60,
      deviceCommandRateLimit: 600,
      heartbeatBatchSize: 256,
      heartbeatBatchConcurrency: 2,
      heartbeatBatchOverlapAt: 32,
      heartbeatBatchOverlapWaitMs: 20,
      heartbeatBatchLingerMs: 25,
      telemetryRetentionDays: 30,
      commandTtlHours: 24,
      commandRetentionDays: 90,
    });
  });

  test("SECRET_KEY is generated once and kept in DATA_DIR", () => {
    const first = loadConfig({ DATA_DIR: dataDir }).secretKey;
    expect(first.length).toBeGreaterThanOrEqual(32);
    expect(loadConfig({ DATA_DIR: dataDir }).secretKey).toBe(first);
  });

  test.each([
    [{ PORT: "abc" }, 'PORT must be an integer from 0 to 65535 (got "abc")'],
    [{ OUTPOST_ROLE: "relay" }, 'OUTPOST_ROLE must be one of all, web, worker, tunnel (got "relay")'],
    [
      { DATABASE_URL: "mysql://x" },
      'DATABASE_URL must start with postgres:// or postgresql:// (got "mysql://x")',
    ],
    [{ BASE_URL: "localhost:4000" }, 'BASE_URL must start with http:// or https:// (got "localhost:4000")'],
    [{ E2E_ENABLED: "maybe" }, 'E2E_ENABLED must be true or false (got "maybe")'],
    [{ SECRET_KEY: "short" }, "SECRET_KEY must be at least 32 characters long"],
    [
      { OUTPOST_BOOTSTRAP_API_TOKEN: "short" },
      "OUTPOST_BOOTSTRAP_API_TOKEN must be at least 32 characters long",
    ],
    [
      { OUTPOST_BOOTSTRAP_ADMIN_EMAIL: "a@b.co" },
      "OUTPOST_BOOTSTRAP_ADMIN_EMAIL and OUTPOST_BOOTSTRAP_ADMIN_PASSWORD must be set together",
    ],
    [
      { LOG_LEVEL: "loud" },
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    ],
    [{ LOG_FORMAT: "fancy" }, 'LOG_FORMAT must be one of auto, json, pretty (got "fancy")'],
    [{ TUNNEL_DATA_PORT: "70000" }, 'TUNNEL_DATA_PORT must be an integer from 0 to 65535 (got "70000")'],
    [
      { HEARTBEAT_BATCH_OVERLAP_AT: "0" },
      'HEARTBEAT_BATCH_OVERLAP_AT must be an integer from 1 to 4096 (got "0")',
    ],
    [
      { REMOTE_ACCESS_PAGE_GRACE_SECONDS: "0" },
      'REMOTE_ACCESS_PAGE_GRACE_SECONDS must be an integer from 1 to 120 (got "0")',
    ],
  ])("%p is refused with one clear line", (env, message) => {
    expect(() => loadConfig({ DATA_DIR: dataDir, ...env })).toThrow(new ConfigError(message));
  });

  test("the CLI prints a bad setting as one line and exits 2 without starting anything", async () => {
    const result = await runOutpost(["start"], { DATA_DIR: dataDir, OUTPOST_ROLE: "relay" });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'outpost: OUTPOST_ROLE must be one of all, web, worker, tunnel (got "relay")\n',
    );
  });

  test.each([
    ["migrate", ["migrate"]],
    ["start", ["start"]],
  ])("%s: an unreachable DATABASE_URL is one line naming it, exit 2", async (_name, args) => {
    const result = await runOutpost(args, {
      DATA_DIR: dataDir,
      PORT: "0",
      DATABASE_URL: "postgres://x:secret-password@127.0.0.1:1/db",
    });
    expect(result).toEqual({
      code: 2,
      stdout: "",
      stderr:
        "outpost: DATABASE_URL: cannot connect to PostgreSQL at 127.0.0.1:1/db (connect ECONNREFUSED 127.0.0.1:1)\n",
    });
  });

  test("wrong DATABASE_URL credentials are one line naming it, without the password, exit 2", async () => {
    const database = await createTestDatabase();
    const url = new URL(database.url);
    url.username = "nobody_here";
    url.password = "secret-password";
    const result = await runOutpost(["migrate"], { DATA_DIR: dataDir, DATABASE_URL: url.toString() });
    expect(result.code).toBe(2);
    expect(result.stderr.split("\n")).toEqual([
      expect.stringMatching(/^outpost: DATABASE_URL: cannot connect to PostgreSQL at .+ \(.+\)$/),
      "",
    ]);
    expect(result.stderr).toContain("nobody_here");
    expect(result.stderr).not.toContain("secret-password");
  });

  test("a PORT already in use is one line naming it, exit 2", async () => {
    const database = await createTestDatabase();
    const holder = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("taken") });
    try {
      const result = await runOutpost(["start"], {
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        HOST: "127.0.0.1",
        PORT: String(holder.port),
      });
      expect(result).toEqual({
        code: 2,
        stdout: "",
        stderr: `outpost: PORT ${holder.port} is already in use (127.0.0.1:${holder.port}); set PORT to a free port\n`,
      });
    } finally {
      holder.stop(true);
    }
  });

  test("logs: readable lines with ISO UTC times when pretty, JSON lines when piped (auto)", async () => {
    const env = { DATA_DIR: dataDir, LOG_LEVEL: "info", OUTPOST_ROLE: "web" };
    const pretty = await startOutpostProcess({
      ...env,
      DATABASE_URL: (await createTestDatabase()).url,
      LOG_FORMAT: "pretty",
    });
    expect(await pretty.interrupt()).toBe(0);
    expect(pretty.output()).toMatch(
      /^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] INFO: Outpost is listening$/m,
    );
    expect(pretty.output()).not.toContain('{"level"');
    // stdout is a pipe here, so the default (auto) writes JSON lines.
    const piped = await startOutpostProcess({ ...env, DATABASE_URL: (await createTestDatabase()).url });
    expect(await piped.interrupt()).toBe(0);
    const lines = piped
      .output()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => line.msg)).toContain("Outpost is listening");
    for (const line of lines) expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test("--help is available on every command", async () => {
    for (const args of [
      ["--help"],
      ["start", "--help"],
      ["migrate", "--help"],
      ["admin", "create", "--help"],
      ["token", "create", "--help"],
    ]) {
      const result = await runOutpost(args, { DATA_DIR: dataDir });
      expect({ args, code: result.code }).toEqual({ args, code: 0 });
      expect(result.stdout).toContain("Usage: outpost");
    }
  });
});
