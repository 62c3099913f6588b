import { describe, expect, test } from "bun:test";
import { enqueueJob } from "../../modules/jobs/service";
import { createTestDatabase } from "../helpers/database";

// Against the real graphile_worker schema (migrated into the template database).
const database = await createTestDatabase();
const { sql } = database;

interface JobRow {
  id: string;
  task_identifier: string;
  queue_name: string | null;
  payload: Record<string, unknown>;
  run_at: Date;
  max_attempts: number;
  key: string | null;
}

const jobsWithKey = (key: string) =>
  sql<JobRow[]>`
    select j.id::text as id, j.task_identifier, j.queue_name, p.payload, j.run_at, j.max_attempts, j.key
    from graphile_worker.jobs j join graphile_worker._private_jobs p on p.id = j.id -- (the view has no payload)
    where j.key = ${key}`;

const inMinutes = (minutes: number) => new Date(Math.floor(Date.now() / 1000) * 1000 + minutes * 60_000);

describe("enqueueJob", () => {
  test("passes task, payload, run_at, max_attempts and queue through to graphile-worker", async () => {
    const runAt = inMinutes(10);
    const id = await enqueueJob(
      sql,
      "probe_task",
      { n: 1, text: "é" },
      {
        jobKey: "options",
        runAt,
        maxAttempts: 3,
        queue: "probe_queue",
      },
    );
    const [job] = await jobsWithKey("options");
    expect(job).toEqual({
      id,
      task_identifier: "probe_task",
      queue_name: "probe_queue",
      payload: { n: 1, text: "é" },
      run_at: runAt,
      max_attempts: 3,
      key: "options",
    });
  });

  test("replace (the default): a second add with the key updates the pending job's payload and run_at", async () => {
    const first = await enqueueJob(sql, "probe_task", { n: 1 }, { jobKey: "replace", runAt: inMinutes(5) });
    const later = inMinutes(30);
    const second = await enqueueJob(sql, "probe_task", { n: 2 }, { jobKey: "replace", runAt: later });
    const jobs = await jobsWithKey("replace");
    expect(jobs).toHaveLength(1);
    expect(second).toBe(first);
    expect(jobs[0]!.payload).toEqual({ n: 2 });
    expect(jobs[0]!.run_at).toEqual(later);
  });

  test("preserve_run_at: a second add with the key keeps the pending job's run_at (a stream cannot postpone it)", async () => {
    const soon = inMinutes(5);
    await enqueueJob(
      sql,
      "probe_task",
      { n: 1 },
      { jobKey: "preserve", jobKeyMode: "preserve_run_at", runAt: soon },
    );
    await enqueueJob(
      sql,
      "probe_task",
      { n: 2 },
      {
        jobKey: "preserve",
        jobKeyMode: "preserve_run_at",
        runAt: inMinutes(30),
      },
    );
    const jobs = await jobsWithKey("preserve");
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.payload).toEqual({ n: 2 });
    expect(jobs[0]!.run_at).toEqual(soon);
  });

  test("inside a transaction, the job exists only if the transaction commits", async () => {
    const rolledBack = sql.begin(async (tx) => {
      await enqueueJob(tx, "probe_task", {}, { jobKey: "rolled-back" });
      throw new Error("abort");
    });
    await expect(rolledBack).rejects.toThrow("abort");
    expect(await jobsWithKey("rolled-back")).toHaveLength(0);

    await sql.begin((tx) => enqueueJob(tx, "probe_task", {}, { jobKey: "committed" }));
    expect(await jobsWithKey("committed")).toHaveLength(1);
  });

  test("delayMs: run that long after the database's now (no process clock in between)", async () => {
    await enqueueJob(sql, "probe_task", {}, { jobKey: "delayed", delayMs: 2500 });
    const [[job], [db]] = await Promise.all([
      jobsWithKey("delayed"),
      sql<{ now: Date }[]>`select now() as now`,
    ]);
    const ahead = job!.run_at.getTime() - db!.now.getTime();
    expect(ahead).toBeGreaterThan(2000);
    expect(ahead).toBeLessThanOrEqual(2500);
  });
});
