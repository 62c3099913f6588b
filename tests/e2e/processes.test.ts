import { describe, expect, test } from "bun:test";
import { createTestDatabase } from "../helpers/database";
import { startOutpostProcess } from "../helpers/process";
import { tempDirs } from "../helpers/temp";
import { OTHER_RUNNER_TOKEN, RUNNER_ID, RUNNER_TOKEN, writeE2EFixture } from "./fixtures";

// Two web processes and one worker process on one PostgreSQL: the lock, idempotency and the
// seed wake-up must hold across processes, not just within one.
const fixture = writeE2EFixture();
const database = await createTestDatabase();
const shared = {
  DATABASE_URL: database.url,
  SECRET_KEY: "e2e-processes-secret-key-0123456789abcdef",
  E2E_ENABLED: "true",
  E2E_CONFIG: fixture.configFile,
  OUTPOST_TEST_OTHER_RUNNER_TOKEN: OTHER_RUNNER_TOKEN,
};
const dataDir = tempDirs("outpost-e2e-proc-");
const [webA, webB, worker] = await Promise.all([
  startOutpostProcess({ ...shared, OUTPOST_ROLE: "web", DATA_DIR: dataDir() }),
  startOutpostProcess({ ...shared, OUTPOST_ROLE: "web", DATA_DIR: dataDir() }),
  startOutpostProcess({ ...shared, OUTPOST_ROLE: "worker", DATA_DIR: dataDir() }),
]);

function create(base: string, body: Record<string, unknown>) {
  return fetch(`${base}/e2e/runs`, {
    method: "POST",
    headers: {
      "x-e2e-runner-id": RUNNER_ID,
      authorization: `Bearer ${RUNNER_TOKEN}`,
      "x-e2e-protocol-version": "1",
      "content-type": "application/json",
    },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, json: (await r.json()) as { data?: { id: string } } }));
}

describe("across processes", () => {
  test("20 concurrent creates over two web processes: one 201, 19 × 409; the seed ran in the worker process", async () => {
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        create(i % 2 ? webA.url : webB.url, {
          suite_id: "smoke",
          environment_label: "local",
          trigger_source: "ci",
        }),
      ),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 409)).toHaveLength(19);
    const [job] =
      await database.sql`select worker_id, status from job_runs where task_identifier = 'e2e_seed'`;
    expect(job!.status).toBe("succeeded");
  }, 30_000);

  test("20 concurrent creates with one idempotency key over two web processes: one run, five rounds", async () => {
    // Several rounds because the race (a replay arriving while the run commits) is timing-dependent.
    for (let round = 0; round < 5; round++) {
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          create(i % 2 ? webA.url : webB.url, {
            suite_id: "smoke",
            environment_label: "staging",
            trigger_source: "ci",
            idempotency_key: `cross-process-${round}`,
          }),
        ),
      );
      expect(replies.filter((r) => r.status >= 300).map((r) => JSON.stringify(r.json))).toEqual([]);
      const ids = new Set(replies.map((r) => r.json.data?.id));
      expect(ids.size).toBe(1);
      expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
      expect(replies.filter((r) => r.status === 200)).toHaveLength(19);
      const cancelled = await fetch(`${webA.url}/e2e/runs/${[...ids][0]}/cancel`, {
        method: "POST",
        headers: { "x-e2e-runner-id": RUNNER_ID, authorization: `Bearer ${RUNNER_TOKEN}` },
      });
      expect(cancelled.status).toBe(202);
    }
  }, 60_000);

  test("every process stops cleanly on SIGINT (web first, then the worker)", async () => {
    expect(await Promise.all([webA.interrupt(), webB.interrupt()])).toEqual([0, 0]);
    expect(await worker.interrupt()).toBe(0);
  }, 30_000);
});
