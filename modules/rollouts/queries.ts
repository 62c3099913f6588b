// Reading rollouts: one with its counts per state, the list, and its devices page by page.
import type { Sql } from "../platform/database";
import { notFound } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { encodeKeysetCursor, parseKeysetCursor } from "../platform/keyset-cursor";
import type { RolloutJson, RolloutStatus, TargetCounts, TargetJson, TargetState } from "./model";

type RolloutRow = {
  id: string;
  name: string;
  action: RolloutJson["action"];
  target_kind: RolloutJson["target"]["kind"];
  target_query: string | null;
  target_view: string | null;
  total: number;
  canary_size: number;
  concurrency: number;
  failure_threshold: number;
  deadline: Date;
  status: RolloutStatus;
  pause_reason: RolloutJson["pause_reason"];
  current_wave: number;
  created_by: string;
  created_at: Date;
  finished_at: Date | null;
};

const emptyCounts = (): TargetCounts => ({ queued: 0, delivered: 0, succeeded: 0, failed: 0, skipped: 0 });

function toJson(row: RolloutRow, counts: TargetCounts): RolloutJson {
  return {
    id: row.id,
    name: row.name,
    action: row.action,
    target: { kind: row.target_kind, query: row.target_query, view: row.target_view },
    total: row.total,
    canary_size: row.canary_size,
    concurrency: row.concurrency,
    failure_threshold: row.failure_threshold,
    deadline: row.deadline.toISOString(),
    status: row.status,
    pause_reason: row.pause_reason,
    current_wave: row.current_wave,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
    counts,
  };
}

const COLUMNS = `id::text as id, name, action, target_kind, target_query, target_view, total, canary_size,
  concurrency, failure_threshold, deadline, status, pause_reason, current_wave, created_by, created_at, finished_at`;

async function countsOf(sql: Sql, ids: string[]): Promise<Map<string, TargetCounts>> {
  const rows = await sql<{ rollout_id: string; state: TargetState; n: number }[]>`
    select rollout_id::text as rollout_id, state, count(*)::int as n from rollout_targets
    where rollout_id = any(${ids}::uuid[]) group by rollout_id, state`;
  const counts = new Map(ids.map((id) => [id, emptyCounts()]));
  for (const row of rows) counts.get(row.rollout_id)![row.state] = row.n;
  return counts;
}

/** One rollout with its devices counted by state; 404 `rollout_not_found`. */
export async function getRollout(sql: Sql, id: string): Promise<RolloutJson> {
  const [row] = isUuid(id)
    ? await sql<RolloutRow[]>`select ${sql.unsafe(COLUMNS)} from rollouts where id = ${id}::uuid`
    : [];
  if (!row) throw notFound("No such rollout", "rollout_not_found");
  return toJson(row, (await countsOf(sql, [row.id])).get(row.id)!);
}

/** Rollouts newest first (keyset), optionally of one status. */
export async function listRollouts(
  sql: Sql,
  options: { status?: RolloutStatus; cursor?: string; limit?: number } = {},
): Promise<{ rollouts: RolloutJson[]; nextCursor: string | null }> {
  const limit = options.limit ?? 50;
  const after = options.cursor ? parseKeysetCursor(options.cursor, { time: true }) : undefined;
  const rows = await sql<(RolloutRow & { sort_key: string })[]>`
    select ${sql.unsafe(COLUMNS)}, created_at::text as sort_key from rollouts
    where true
      ${options.status ? sql`and status = ${options.status}` : sql``}
      ${after ? sql`and (created_at, id) < (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
    order by created_at desc, id desc limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const counts = await countsOf(
    sql,
    page.map((r) => r.id),
  );
  const last = page[page.length - 1];
  return {
    rollouts: page.map((row) => toJson(row, counts.get(row.id)!)),
    nextCursor: rows.length > limit && last ? encodeKeysetCursor([last.sort_key, last.id]) : null,
  };
}

type TargetRow = {
  device_id: string;
  device_name: string;
  wave: number;
  position: number;
  state: TargetState;
  command_id: string | null;
  started_at: Date | null;
  finished_at: Date | null;
  output: unknown;
  error: string | null;
};

export function targetJson(row: TargetRow): TargetJson {
  return {
    device_id: row.device_id,
    device_name: row.device_name,
    wave: row.wave,
    state: row.state,
    command_id: row.command_id,
    started_at: row.started_at?.toISOString() ?? null,
    finished_at: row.finished_at?.toISOString() ?? null,
    output: row.output ?? null,
    error: row.error,
  };
}

/** A rollout's devices in the order they are acted on (keyset by position), optionally in one state. */
export async function listTargets(
  sql: Sql,
  id: string,
  options: { state?: TargetState; cursor?: string; limit?: number } = {},
): Promise<{ targets: TargetJson[]; nextCursor: string | null }> {
  const limit = options.limit ?? 100;
  const after = options.cursor ? parseKeysetCursor(options.cursor) : undefined;
  const rows = await sql<TargetRow[]>`
    select device_id::text as device_id, device_name, wave, position, state, command_id::text as command_id,
      started_at, finished_at, output, error
    from rollout_targets where rollout_id = ${id}::uuid
      ${options.state ? sql`and state = ${options.state}` : sql``}
      ${after ? sql`and position > ${Number(after[0])}` : sql``}
    order by position limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    targets: page.map(targetJson),
    nextCursor:
      rows.length > limit && last ? encodeKeysetCursor([String(last.position), last.device_id]) : null,
  };
}

/** Rollouts not finished (running, paused, or cancelled with results still due): each needs a driver run. */
export async function activeRolloutIds(sql: Sql): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id::text as id from rollouts where finished_at is null`;
  return rows.map((r) => r.id);
}
