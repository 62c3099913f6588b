import { describe, expect, test } from "bun:test";
import { startTestApp } from "../helpers/app";

const app = await startTestApp();
const sql = app.database.sql;

describe("shutdown", () => {
  test("stop() waits for a running job; the job finishes, is recorded as succeeded and never stays queued", async () => {
    const admin = await app.token("admin");
    // Hold a lock the prune_sessions job needs (it deletes expired sessions), so it is still
    // running when stop() begins.
    const blocker = await sql.reserve();
    await blocker`begin`;
    await blocker`lock table operator_sessions in share mode`;
    const queued = await app.fetch("/api/v1/jobs/prune_sessions/run", {
      method: "POST",
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(queued.status).toBe(202);
    const jobId = String(((await queued.json()) as { data: { job_id: string | number } }).data.job_id);
    const runStatus = async () => {
      const [row] = await sql<{ status: string; finished_at: string | null }[]>`
        select status, finished_at from job_runs where job_id = ${jobId} and task_identifier = 'prune_sessions'`;
      return row;
    };
    for (let i = 0; i < 200 && (await runStatus())?.status !== "running"; i++) await Bun.sleep(25);
    expect((await runStatus())?.status).toBe("running");

    let stoppedAt: number | undefined;
    const stopping = app.running.stop().then(() => {
      stoppedAt = Date.now();
    });
    await Bun.sleep(1500);
    expect(stoppedAt).toBeUndefined(); // still draining the job
    expect((await runStatus())?.status).toBe("running");
    const releasedAt = Date.now();
    await blocker`commit`;
    blocker.release();
    await stopping;
    expect(stoppedAt!).toBeGreaterThanOrEqual(releasedAt);

    const run = await runStatus();
    expect(run?.status).toBe("succeeded");
    expect(run?.finished_at).not.toBeNull();
    const [left] = await sql<{ n: number }[]>`
      select count(*)::int as n from graphile_worker.jobs where id = ${jobId}::bigint`;
    expect(left!.n).toBe(0);
  });
});
