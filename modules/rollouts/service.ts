/**
 * What the rollouts feature offers its routes, jobs and other features: acting on many devices in
 * waves (docs/fleet.md, _Rollouts_). Logic lives in the files named below.
 */
import type { Database } from "../platform/database";
import { type DriveOptions, driveRollout, TICK_MS } from "./driver";
import type { RolloutJson } from "./model";
import { activeRolloutIds } from "./queries";
import { enqueueRolloutRun } from "./runs";

export { describeAction } from "./actions";
export { controlRollout, type RolloutControl } from "./control";
export { createRollout, type Overlap, overlapWithActive } from "./create";
export { driveRollout, TICK_MS } from "./driver";
export { getRollout, listRollouts, listTargets } from "./queries";
export { DRIVE_TASK } from "./runs";

/**
 * One driver run (the `rollout_drive` job): moves the rollout on, then queues the next run in
 * TICK_MS while it is not finished (another driver busy with it: that one queues the next).
 */
export async function runRolloutDriver(database: Database, id: string, options: DriveOptions): Promise<void> {
  const result = await driveRollout(database, id, options);
  if (result === "again")
    await enqueueRolloutRun(database.sql, id, new Date(options.now.getTime() + TICK_MS));
}

/**
 * Gives every unfinished rollout a driver run (the `rollouts_sweep` cron): a worker killed during a
 * run leaves its job locked for hours; this starts a fresh one (idempotent: one pending run per key).
 */
export async function sweepRollouts(database: Database): Promise<number> {
  const ids = await activeRolloutIds(database.sql);
  for (const id of ids) await enqueueRolloutRun(database.sql, id);
  return ids.length;
}

/** What the audit record of a new rollout keeps (the API's and the console's alike). */
export function creationAuditDetails(rollout: RolloutJson, overlapConfirmed: boolean) {
  return {
    name: rollout.name,
    action: rollout.action.type,
    target: rollout.target,
    devices: rollout.total,
    overlap_confirmed: overlapConfirmed,
  };
}
