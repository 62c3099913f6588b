import { enqueueJob } from "../jobs/service";
import type { Sql } from "../platform/database";

export const DRIVE_TASK = "rollout_drive";

/**
 * Queues a driver run of a rollout (at `runAt`, else now). One pending run per rollout (its job key);
 * a run already under way adds the next one itself.
 */
export async function enqueueRolloutRun(sql: Sql, id: string, runAt?: Date): Promise<void> {
  await enqueueJob(sql, DRIVE_TASK, { rollout_id: id }, { jobKey: `rollout:${id}`, runAt, maxAttempts: 5 });
}
