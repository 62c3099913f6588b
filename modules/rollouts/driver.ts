/**
 * The rollout driver: one `rollout_drive` job run (jobs/rollout-drive.ts) moves a rollout on as far as
 * it can now, then asks to run again in TICK_MS. Only one driver acts on a rollout at a time (a
 * session advisory lock on a reserved connection, released by PostgreSQL if its process dies), and
 * every device's step is a state transition under the rollout row's lock, committed with the command
 * it queued: a driver killed at any point leaves each device either untouched or acted on once.
 */
import { commandOutcomes, queueCommand, withdrawQueuedCommands } from "../commands/service";
import type { Database, Sql } from "../platform/database";
import { applyStateAction, commandOf, type DeviceOutcome } from "./actions";
import type { RolloutAction, RolloutStatus } from "./model";

/** How often a running rollout looks at its devices' results. */
export const TICK_MS = 2000;
/** Batches of a state action applied in one run before the next run is asked for. */
const STATE_BATCHES_PER_RUN = 20;

export interface DriveOptions {
  now: Date;
  onlineWindowSeconds: number;
}

interface RolloutRow {
  id: string;
  action: RolloutAction;
  status: RolloutStatus;
  concurrency: number;
  failure_threshold: number;
  deadline: Date;
  current_wave: number;
  threshold_accepted_wave: number;
  finished_at: Date | null;
}

/** `again`: run once more in TICK_MS; `done`: finished; `busy`: another driver holds it. */
export type DriveResult = "again" | "done" | "busy";

export async function driveRollout(
  database: Database,
  id: string,
  options: DriveOptions,
): Promise<DriveResult> {
  const lock = await database.sql.reserve();
  try {
    const [held] = await lock<{ ok: boolean }[]>`
      select pg_try_advisory_lock(hashtextextended(${`rollout:${id}`}, 0)) as ok`;
    if (!held?.ok) return "busy";
    try {
      return await drive(database.sql, id, options);
    } finally {
      await lock`select pg_advisory_unlock(hashtextextended(${`rollout:${id}`}, 0))`;
    }
  } finally {
    lock.release();
  }
}

const lockRollout = async (tx: Sql, id: string) =>
  (
    await tx<RolloutRow[]>`
      select id, action, status, concurrency, failure_threshold, deadline, current_wave,
        threshold_accepted_wave, finished_at
      from rollouts where id = ${id}::uuid for update`
  )[0];

async function drive(sql: Sql, id: string, options: DriveOptions): Promise<DriveResult> {
  await syncCommands(sql, id);
  for (let batch = 0; batch < STATE_BATCHES_PER_RUN; batch++) {
    const step = await sql.begin((tx) => nextStep(tx as unknown as Sql, id, options));
    if (step.kind === "result") return step.result;
    if (step.kind === "dispatched") return "again"; // commands: their results come later
    if (step.kind === "state") await finishStateBatch(sql, step.action, step.ids, options);
  }
  return "again";
}

type Step =
  | { kind: "result"; result: DriveResult }
  | { kind: "dispatched" }
  | { kind: "continue" }
  | { kind: "state"; action: RolloutAction; ids: string[] };

/** One decision under the rollout's row lock: finish, pause, advance the wave, or start devices. */
async function nextStep(tx: Sql, id: string, options: DriveOptions): Promise<Step> {
  const rollout = await lockRollout(tx, id);
  if (!rollout || rollout.finished_at) return { kind: "result", result: "done" };
  if (options.now >= rollout.deadline) {
    await endAtDeadline(tx, rollout, options.now);
    return { kind: "result", result: "done" };
  }
  const [open] = await tx<{ delivered: number; unfinished: number }[]>`
    select count(*) filter (where state = 'delivered')::int as delivered,
      count(*) filter (where state in ('queued', 'delivered'))::int as unfinished
    from rollout_targets where rollout_id = ${id}::uuid`;
  if (rollout.status === "cancelled") {
    if (open!.delivered > 0) return { kind: "result", result: "again" };
    await tx`update rollouts set finished_at = ${options.now}, updated_at = now() where id = ${id}::uuid`;
    return { kind: "result", result: "done" };
  }
  if (rollout.status !== "running") return { kind: "result", result: "again" };

  const [wave] = await tx<
    { size: number; failed: number; unfinished: number; in_flight: number; later: number }[]
  >`
    select count(*) filter (where wave = ${rollout.current_wave})::int as size,
      count(*) filter (where wave = ${rollout.current_wave} and state = 'failed')::int as failed,
      count(*) filter (where wave = ${rollout.current_wave} and state in ('queued', 'delivered'))::int as unfinished,
      count(*) filter (where state = 'delivered' or (state = 'queued' and command_id is not null))::int as in_flight,
      count(*) filter (where wave > ${rollout.current_wave})::int as later
    from rollout_targets where rollout_id = ${id}::uuid`;
  const { size, failed, unfinished, in_flight, later } = wave!;
  if (
    rollout.threshold_accepted_wave < rollout.current_wave &&
    size > 0 &&
    (failed * 100) / size > rollout.failure_threshold
  ) {
    await tx`update rollouts set status = 'paused', pause_reason = 'threshold', updated_at = now()
      where id = ${id}::uuid`;
    return { kind: "result", result: "again" };
  }
  if (unfinished === 0) {
    if (later > 0) {
      await tx`update rollouts set current_wave = current_wave + 1, updated_at = now() where id = ${id}::uuid`;
      return { kind: "continue" };
    }
    await tx`update rollouts set status = 'completed', pause_reason = null, finished_at = ${options.now},
      updated_at = now() where id = ${id}::uuid`;
    return { kind: "result", result: "done" };
  }
  const free = rollout.concurrency - in_flight;
  if (free <= 0) return { kind: "result", result: "again" };
  return startDevices(tx, rollout, free, options);
}

/** Starts up to `free` devices of the current wave: queues their commands, or claims them for a state action. */
async function startDevices(
  tx: Sql,
  rollout: RolloutRow,
  free: number,
  options: DriveOptions,
): Promise<Step> {
  const picked = await tx<{ device_id: string }[]>`
    select device_id from rollout_targets
    where rollout_id = ${rollout.id}::uuid and wave = ${rollout.current_wave} and state = 'queued'
      and command_id is null
    order by position limit ${free} for update`;
  if (picked.length === 0) return { kind: "result", result: "again" };
  const ids = picked.map((p) => p.device_id);
  const command = commandOf(rollout.action);
  if (!command) {
    // Claimed: a driver that dies before recording the outcome leaves them started; the next one
    // applies the action again, which changes nothing a second time (approvals and tags are idempotent).
    await tx`update rollout_targets set started_at = ${options.now}
      where rollout_id = ${rollout.id}::uuid and device_id = any(${ids}::uuid[])`;
    return { kind: "state", action: rollout.action, ids };
  }
  const ttlSeconds = Math.max(1, Math.ceil((rollout.deadline.getTime() - options.now.getTime()) / 1000));
  for (const deviceId of ids) {
    const queued = await queueCommand(tx, {
      deviceId,
      ...command,
      ttlSeconds,
      queuedBy: `rollout ${rollout.id}`,
    })
      .then((c) => c.id)
      .catch((error: { code?: string }) => {
        if (error.code === "device_not_found") return null;
        throw error;
      });
    if (queued)
      await tx`update rollout_targets set command_id = ${queued}::uuid, started_at = ${options.now}
        where rollout_id = ${rollout.id}::uuid and device_id = ${deviceId}::uuid and command_id is null`;
    else
      await tx`update rollout_targets set state = 'skipped', error = 'The device no longer exists',
        started_at = ${options.now}, finished_at = ${options.now}
        where rollout_id = ${rollout.id}::uuid and device_id = ${deviceId}::uuid`;
  }
  return { kind: "dispatched" };
}

/** Applies a state action to claimed devices and records each outcome. */
async function finishStateBatch(sql: Sql, action: RolloutAction, ids: string[], options: DriveOptions) {
  const outcomes = await applyStateAction(sql, action, ids, options);
  await recordOutcomes(
    sql,
    [...outcomes].map(([deviceId, outcome]) => ({ deviceId, ...outcome })),
    options.now,
  );
}

async function recordOutcomes(
  sql: Sql,
  rows: ({ deviceId: string; output?: unknown } & DeviceOutcome)[],
  now: Date,
  byCommand = false,
) {
  if (rows.length === 0) return;
  const json = rows.map((r) => ({
    id: r.deviceId,
    state: r.state,
    error: r.error ?? null,
    output: r.output ?? null,
  }));
  await sql`
    update rollout_targets t set state = r.state, error = r.error, output = r.output, finished_at = ${now}
    from jsonb_to_recordset(${JSON.stringify(json)}::jsonb) as r(id uuid, state text, error text, output jsonb)
    where ${byCommand ? sql`t.command_id = r.id` : sql`t.device_id = r.id`}
      and t.state in ('queued', 'delivered')`;
}

/** Brings devices with a command up to date with it: delivered, its result, or expired (skipped). */
export async function syncCommands(sql: Sql, rolloutId: string, now = new Date()) {
  const open = await sql<{ command_id: string; state: string }[]>`
    select command_id::text as command_id, state from rollout_targets
    where rollout_id = ${rolloutId}::uuid and command_id is not null and state in ('queued', 'delivered')`;
  if (open.length === 0) return;
  const found = await commandOutcomes(
    sql,
    open.map((o) => o.command_id),
  );
  const delivered: string[] = [];
  const finished: ({ deviceId: string; output?: unknown } & DeviceOutcome)[] = [];
  for (const { command_id, state } of open) {
    const command = found.get(command_id);
    if (!command)
      finished.push({ deviceId: command_id, state: "skipped", error: "Its command was withdrawn" });
    else if (command.status === "delivered" && state === "queued") delivered.push(command_id);
    else if (command.status === "succeeded" || command.status === "failed")
      finished.push({
        deviceId: command_id,
        state: command.status,
        output: command.output,
        error: command.error ?? undefined,
      });
    else if (command.status === "expired")
      finished.push({ deviceId: command_id, state: "skipped", error: "Offline until the deadline" });
  }
  if (delivered.length > 0)
    await sql`update rollout_targets set state = 'delivered'
      where command_id = any(${delivered}::uuid[]) and state = 'queued'`;
  await recordOutcomes(sql, finished, now, true);
}

/** The deadline: commands not yet delivered are withdrawn, every unfinished device is skipped. */
async function endAtDeadline(tx: Sql, rollout: RolloutRow, now: Date) {
  const queued = await tx<{ command_id: string }[]>`
    select command_id::text as command_id from rollout_targets
    where rollout_id = ${rollout.id}::uuid and state = 'queued' and command_id is not null`;
  await withdrawQueuedCommands(
    tx,
    queued.map((q) => q.command_id),
  );
  await tx`update rollout_targets set finished_at = ${now},
      state = 'skipped',
      error = case when state = 'delivered' then 'No result by the deadline'
        when command_id is not null then 'Offline until the deadline'
        else 'Not started before the deadline' end
    where rollout_id = ${rollout.id}::uuid and state in ('queued', 'delivered')`;
  await tx`update rollouts set status = case when status = 'cancelled' then 'cancelled' else 'completed' end,
    finished_at = ${now}, updated_at = now() where id = ${rollout.id}::uuid`;
}
