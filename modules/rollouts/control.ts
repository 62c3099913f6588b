// An operator's pause, resume and cancel: each a transition of the rollout row under its lock (409
// when the rollout is not in a state that allows it), followed by a driver run.
import { withdrawQueuedCommands } from "../commands/service";
import type { Database, Sql } from "../platform/database";
import { AppError, notFound } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import type { RolloutStatus } from "./model";
import { enqueueRolloutRun } from "./runs";

export type RolloutControl = "pause" | "resume" | "cancel";

const ALLOWED: Record<RolloutControl, RolloutStatus[]> = {
  pause: ["running"],
  resume: ["paused"],
  cancel: ["running", "paused"],
};

/** Applies an operator's pause, resume or cancel. 404 unknown rollout, 409 `invalid_transition`. */
export async function controlRollout(
  database: Database,
  id: string,
  control: RolloutControl,
  now: Date,
): Promise<void> {
  if (!isUuid(id)) throw notFound("No such rollout", "rollout_not_found");
  await database.sql.begin(async (tx) => {
    const sql = tx as unknown as Sql;
    const [row] = await sql<{ status: RolloutStatus }[]>`
      select status from rollouts where id = ${id}::uuid for update`;
    if (!row) throw notFound("No such rollout", "rollout_not_found");
    if (!ALLOWED[control].includes(row.status))
      throw new AppError(409, "invalid_transition", `A ${row.status} rollout cannot be ${control}d`, {
        status: row.status,
      });
    if (control === "pause")
      await sql`update rollouts set status = 'paused', pause_reason = 'operator', updated_at = now()
        where id = ${id}::uuid`;
    else if (control === "resume")
      // Resuming a wave its failures paused accepts them: that wave does not pause again.
      await sql`update rollouts set status = 'running', updated_at = now(),
          threshold_accepted_wave = case when pause_reason = 'threshold' then current_wave
            else threshold_accepted_wave end,
          pause_reason = null
        where id = ${id}::uuid`;
    else await cancel(sql, id, now);
    await enqueueRolloutRun(sql, id);
  });
}

/** Devices not yet reached are skipped (their queued commands withdrawn); delivered ones report on. */
async function cancel(sql: Sql, id: string, now: Date) {
  const queued = await sql<{ command_id: string }[]>`
    select command_id::text as command_id from rollout_targets
    where rollout_id = ${id}::uuid and state = 'queued' and command_id is not null`;
  const withdrawn = new Set(
    await withdrawQueuedCommands(
      sql,
      queued.map((q) => q.command_id),
    ),
  );
  // A command claimed meanwhile stays with its device: the driver records its result as delivered.
  await sql`update rollout_targets set state = 'skipped', error = 'Cancelled', finished_at = ${now}
    where rollout_id = ${id}::uuid and state = 'queued'
      and (command_id is null or command_id = any(${[...withdrawn]}::uuid[]))`;
  await sql`update rollouts set status = 'cancelled', pause_reason = null, updated_at = now()
    where id = ${id}::uuid`;
}
