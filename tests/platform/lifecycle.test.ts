import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { isAlive } from "../../modules/platform/embedded-postgres";
import { killEmbeddedPostgres, runOutpost, startOutpostProcess } from "../helpers/process";

// The real command on the embedded PostgreSQL kept in DATA_DIR, as `npm start` runs it.
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-lifecycle-"));
const env = { DATA_DIR: dataDir };
afterAll(() => {
  killEmbeddedPostgres(path.join(dataDir, "postgres"));
  rmSync(dataDir, { recursive: true, force: true });
});

function postmasterPid(): number | undefined {
  const file = path.join(dataDir, "postgres", "postmaster.pid");
  return existsSync(file) ? Number(readFileSync(file, "utf8").split("\n")[0]) : undefined;
}

describe("outpost start on embedded PostgreSQL", () => {
  test("first start prints the setup code; CLI commands work while it runs; Ctrl-C leaves no Postgres", async () => {
    const outpost = await startOutpostProcess(env);
    expect(outpost.output()).toMatch(/setup code:\s+[\w-]{12}/);
    const pid = postmasterPid()!;
    expect(isAlive(pid)).toBe(true);

    // The CLI shares the running server's PostgreSQL instead of starting a second one.
    const created = await runOutpost(
      ["admin", "create", "--email", "Keeper@Example.test"],
      env,
      "a durable password\n",
    );
    expect(created).toMatchObject({ code: 0, stdout: "Created admin keeper@example.test\n" });
    const token = await runOutpost(["token", "create", "--name", "ci", "--role", "viewer"], env);
    expect(token.code).toBe(0);
    const secret = token.stdout.trim();
    const jobs = await fetch(`${outpost.url}/api/v1/jobs`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(jobs.status).toBe(200);
    expect(postmasterPid()).toBe(pid);
    // The launcher keeps freed memory a second before giving it back (tunnel throughput, docs/remote-access.md).
    const environ = readFileSync(`/proc/${outpost.process.pid}/environ`, "utf8").split("\0");
    expect(environ).toContain(`MIMALLOC_PURGE_DELAY=${process.env.MIMALLOC_PURGE_DELAY ?? "1000"}`);

    expect(await outpost.interrupt()).toBe(0);
    const log = outpost.output();
    const order = [
      "HTTP stopped",
      "job runner drained and stopped",
      "embedded PostgreSQL stopped",
      "stopped cleanly",
    ];
    const positions = order.map((line) => log.indexOf(line));
    expect(positions.every((p) => p > 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(isAlive(pid)).toBe(false);
    expect(postmasterPid()).toBeUndefined();
  });

  test("a restart keeps operators; the CLI starts and stops PostgreSQL itself when no server runs", async () => {
    const again = await runOutpost(
      ["admin", "create", "--email", "keeper@example.test"],
      env,
      "a durable password\n",
    );
    expect(again.code).toBe(2);
    expect(again.stderr).toBe("outpost: An operator with email keeper@example.test already exists\n");
    expect(postmasterPid()).toBeUndefined();

    const outpost = await startOutpostProcess(env);
    expect(outpost.output()).not.toContain("setup code");
    const login = await fetch(`${outpost.url}/setup`, { redirect: "manual" });
    expect(login.headers.get("location")).toBe("/login");
    expect(await outpost.interrupt()).toBe(0);
  });

  test("migrate applies migrations and exits", async () => {
    const result = await runOutpost(["migrate"], env);
    expect(result).toMatchObject({ code: 0, stdout: "Database is up to date.\n" });
    expect(postmasterPid()).toBeUndefined();
  });
});
