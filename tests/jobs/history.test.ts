import { describe, expect, test } from "bun:test";
import { JOB_HISTORY_DAYS, jobOverview, listRecentRuns, pruneJobHistory } from "../../modules/jobs/service";
import { createTestDatabase } from "../helpers/database";

const database = await createTestDatabase();
const { sql } = database;

const DAY_MS = 86_400_000;

describe("job run history (job_runs)", () => {
  test("lists runs newest first with their fields, counts the last 24 h, prunes past the kept days", async () => {
    const now = Date.now();
    const at = (daysAgo: number) => new Date(now - daysAgo * DAY_MS);
    await sql`insert into job_runs (job_id, task_identifier, attempt, status, started_at, finished_at, duration_ms, error, worker_id)
      values ('1', 'old_task', 1, 'succeeded', ${at(JOB_HISTORY_DAYS + 1)}, ${at(JOB_HISTORY_DAYS + 1)}, 5, null, 'w1'),
             ('2', 'day_old', 1, 'failed', ${at(2)}, ${at(2)}, 7, 'boom', 'w1'),
             ('3', 'recent', 2, 'failed', ${at(0.1)}, ${at(0.1)}, 9, 'bang', 'w2'),
             ('4', 'recent', 1, 'succeeded', ${at(0.05)}, null, null, null, 'w2')`;

    const runs = await listRecentRuns(database, 10);
    expect(runs.map((r) => r.jobId)).toEqual(["4", "3", "2", "1"]);
    expect(runs[1]).toEqual({
      id: expect.any(String),
      jobId: "3",
      taskIdentifier: "recent",
      attempt: 2,
      status: "failed",
      startedAt: at(0.1),
      finishedAt: at(0.1),
      durationMs: 9,
      error: "bang",
      workerId: "w2",
    });
    expect(runs[0]!.finishedAt).toBeNull();

    const overview = await jobOverview(database);
    expect({ succeeded: overview.succeeded24h, failed: overview.failed24h }).toEqual({
      succeeded: 1,
      failed: 1,
    });

    expect(await pruneJobHistory(database)).toBe(1);
    expect((await listRecentRuns(database, 10)).map((r) => r.jobId)).toEqual(["4", "3", "2"]);
  });
});
