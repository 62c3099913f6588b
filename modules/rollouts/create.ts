// Creating a rollout: its devices resolved once and snapshotted, its waves sized, conflicts with
// active rollouts reported, and its first driver run queued with it (one transaction).
import { deviceNames } from "../devices/service";
import { deviceMembers } from "../fleet/service";
import type { Database, Sql } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { checkAction, describeAction } from "./actions";
import {
  type CreateRolloutBody,
  DEADLINE_MAX_HOURS,
  ROLLOUT_DEVICES_MAX,
  ROLLOUT_IDS_MAX,
  ROLLOUT_NAME_MAX,
} from "./model";
import { enqueueRolloutRun } from "./runs";

export const DEFAULT_CONCURRENCY = 50;
export const DEFAULT_FAILURE_THRESHOLD = 10;
export const DEFAULT_DEADLINE_HOURS = 24;
/** Devices of other active rollouts named in a conflict's details. */
const OVERLAP_SHOWN = 20;

export interface Overlap {
  count: number;
  device_ids: string[];
  rollouts: { id: string; name: string }[];
}

type Target = { id: string; name: string };

/** The devices a request names: its ids (those that exist), or its query and/or view now. */
async function resolveTargets(
  database: Database,
  target: CreateRolloutBody["target"],
  options: { onlineWindowSeconds: number },
): Promise<{ kind: "ids" | "query" | "view"; devices: Target[] }> {
  const byQuery = Boolean(target.q?.trim() || target.view?.trim());
  if (target.ids?.length && byQuery)
    throw badRequest("Give either ids or a query and/or view, not both", { field: "target" });
  if (target.ids?.length) {
    if (target.ids.length > ROLLOUT_IDS_MAX)
      throw badRequest(`At most ${ROLLOUT_IDS_MAX} ids: use a query or a view`, { field: "target.ids" });
    const wanted = [...new Set(target.ids.filter(isUuid).map((id) => id.toLowerCase()))];
    const names = await deviceNames(database.sql, wanted);
    // In the order given: the first ones are the canary.
    const devices = wanted.flatMap((id) => (names.has(id) ? [{ id, name: names.get(id)! }] : []));
    return { kind: "ids", devices };
  }
  if (!byQuery) throw badRequest("Say which devices: ids, a query or a view", { field: "target" });
  const devices = await deviceMembers(database, target, options, ROLLOUT_DEVICES_MAX);
  if (devices.length > ROLLOUT_DEVICES_MAX)
    throw badRequest(`A rollout acts on at most ${ROLLOUT_DEVICES_MAX} devices: narrow the query`, {
      field: "target",
    });
  return { kind: target.view?.trim() ? "view" : "query", devices };
}

/** Devices of `ids` still to be acted on by another running or paused rollout. */
export async function overlapWithActive(sql: Sql, ids: string[]): Promise<Overlap> {
  const rows = await sql<{ device_id: string; rollout_id: string; name: string }[]>`
    select t.device_id::text as device_id, r.id::text as rollout_id, r.name
    from rollout_targets t join rollouts r on r.id = t.rollout_id
    where t.device_id = any(${ids}::uuid[]) and t.state in ('queued', 'delivered')
      and r.status in ('running', 'paused')`;
  const devices = [...new Set(rows.map((r) => r.device_id))];
  const rollouts = new Map(rows.map((r) => [r.rollout_id, r.name]));
  return {
    count: devices.length,
    device_ids: devices.slice(0, OVERLAP_SHOWN),
    rollouts: [...rollouts].map(([id, name]) => ({ id, name })),
  };
}

function canarySize(total: number, body: CreateRolloutBody): number {
  if (body.canary_count !== undefined && body.canary_percent !== undefined)
    throw badRequest("Give the canary as a count or a percentage, not both", { field: "canary_count" });
  if (body.canary_count !== undefined) return Math.min(total, body.canary_count);
  if (body.canary_percent !== undefined)
    return body.canary_percent === 0
      ? 0
      : Math.min(total, Math.max(1, Math.ceil((total * body.canary_percent) / 100)));
  return 0;
}

function deadlineOf(body: CreateRolloutBody, now: Date): Date {
  if (body.deadline === undefined) return new Date(now.getTime() + DEFAULT_DEADLINE_HOURS * 3_600_000);
  const deadline = new Date(body.deadline);
  if (Number.isNaN(deadline.getTime()) || deadline <= now)
    throw badRequest("The deadline must be in the future", { field: "deadline" });
  if (deadline.getTime() - now.getTime() > DEADLINE_MAX_HOURS * 3_600_000)
    throw badRequest(`The deadline is at most ${DEADLINE_MAX_HOURS / 24} days away`, { field: "deadline" });
  return deadline;
}

/**
 * Creates a rollout and queues its driver. 400 for a bad action, target or setting; 409
 * `rollout_overlap` (details: the overlap) when devices are in another active rollout, unless
 * `confirm_overlap`. Returns the new rollout's id.
 */
export async function createRollout(
  database: Database,
  body: CreateRolloutBody,
  context: { createdBy: string; now: Date; onlineWindowSeconds: number },
): Promise<string> {
  checkAction(body.action);
  const name = (body.name?.trim() || describeAction(body.action)).slice(0, ROLLOUT_NAME_MAX);
  const deadline = deadlineOf(body, context.now);
  const { kind, devices } = await resolveTargets(database, body.target, context);
  if (devices.length === 0) throw badRequest("No device matches: nothing to roll out", { field: "target" });
  const canary = canarySize(devices.length, body);
  const ids = devices.map((d) => d.id);
  return database.sql.begin(async (tx) => {
    const sql = tx as unknown as Sql;
    // Creations take turns, so two operators starting at once cannot both miss each other's overlap.
    await sql`select pg_advisory_xact_lock(hashtextextended('rollouts:create', 0))`;
    const overlap = await overlapWithActive(sql, ids);
    if (overlap.count > 0 && !body.confirm_overlap)
      throw new AppError(
        409,
        "rollout_overlap",
        `${overlap.count} of these devices are in another active rollout (${overlap.rollouts.map((r) => r.name).join(", ")}); confirm to start anyway`,
        overlap,
      );
    const [row] = await sql<{ id: string }[]>`
      insert into rollouts (name, action, target_kind, target_query, target_view, canary_count, canary_percent,
        canary_size, total, concurrency, failure_threshold, deadline, status, created_by, created_at)
      values (${name}, ${JSON.stringify(body.action)}::jsonb, ${kind}, ${body.target.q?.trim() || null},
        ${body.target.view?.trim() || null}, ${body.canary_count ?? null}, ${body.canary_percent ?? null},
        ${canary}, ${devices.length}, ${body.concurrency ?? DEFAULT_CONCURRENCY},
        ${body.failure_threshold ?? DEFAULT_FAILURE_THRESHOLD}, ${deadline}, 'running', ${context.createdBy},
        ${context.now})
      returning id::text as id`;
    const id = row!.id;
    await sql`
      insert into rollout_targets (rollout_id, device_id, device_name, position, wave)
      select ${id}::uuid, d.id, d.name, d.position, case when d.position <= ${canary} then 1 else 2 end
      from unnest(${ids}::uuid[], ${devices.map((d) => d.name)}::text[]) with ordinality as d(id, name, position)`;
    await enqueueRolloutRun(sql, id);
    return id;
  }) as Promise<string>;
}
