import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createTestDatabase } from "../helpers/database";
import { startOutpostProcess } from "../helpers/process";

// Two real processes on one PostgreSQL, as a scaled-out deployment runs them.
const database = await createTestDatabase();
const token = "ci-bootstrap-token-0123456789abcdef0123";
const shared = {
  DATABASE_URL: database.url,
  SECRET_KEY: "roles-test-secret-key-0123456789abcdef",
  OUTPOST_BOOTSTRAP_API_TOKEN: token,
};

async function waitFor<T>(read: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await read();
    if (value !== undefined) return value;
    await Bun.sleep(50);
  }
  throw new Error("timed out");
}

describe("web and worker roles", () => {
  test("a job enqueued by the web process runs in the worker process, and is gone after a clean stop", async () => {
    const web = await startOutpostProcess({
      ...shared,
      OUTPOST_ROLE: "web",
      DATA_DIR: mkdtempSync(path.join(tmpdir(), "web-")),
    });
    const worker = await startOutpostProcess({
      ...shared,
      OUTPOST_ROLE: "worker",
      DATA_DIR: mkdtempSync(path.join(tmpdir(), "worker-")),
    });
    try {
      const ready = await (await fetch(`${web.url}/readyz`)).json();
      expect(ready.checks.worker).toBe("not in this role");
      // The worker role serves no HTTP.
      expect(
        await fetch(`${worker.url}/healthz`).then(
          () => true,
          () => false,
        ),
      ).toBe(false);

      const response = await fetch(`${web.url}/api/v1/jobs/prune_sessions/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(202);
      const { data } = await response.json();

      const run = await waitFor(async () => {
        const [row] = await database.sql<{ status: string; worker_id: string }[]>`
          select status, worker_id from job_runs where job_id = ${data.job_id} and status <> 'running'`;
        return row;
      });
      expect(run.status).toBe("succeeded");
      expect(run.worker_id.endsWith(`:${worker.process.pid}`)).toBe(true);
      expect(run.worker_id).not.toContain(`:${web.process.pid}`);

      expect(await worker.interrupt()).toBe(0);
      // A finished job must not stay locked in the queue (it would run again hours later).
      const [left] = await database.sql<{ n: number }[]>`select count(*)::int as n from graphile_worker.jobs`;
      expect(left!.n).toBe(0);
    } finally {
      await web.interrupt();
      if (worker.process.exitCode === null) await worker.interrupt();
    }
  });
});
