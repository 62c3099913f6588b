/**
 * Hourly telemetry rollups: what charts over days and the dashboard read instead of raw heartbeats.
 *
 * The `telemetry_rollup` job (every minute) folds raw rows into `telemetry_hourly` (per device and
 * UTC hour: heartbeats, and `[count, sum, min, max]` per numeric field) and `telemetry_fleet_hourly`
 * (per hour: devices seen, heartbeats). It reads raw rows in windows of at most 15 minutes (longer
 * after empty ones) after its watermark (`telemetry_rollup_progress.rolled_until`) and merges each
 * window into the hours it touches, watermark and rollups in one transaction: a crash repeats
 * nothing and loses nothing.
 * Windows end SETTLE_MS before now, so a heartbeat transaction still open when the window closes
 * (they take milliseconds) is not skipped. Rows inserted later with an older `recorded_at` (seeding)
 * are not rolled up.
 */
import type { TransactionSql } from "postgres";
import type { Sql } from "../platform/database";
import { listTelemetryPartitions } from "./service";

/** Raw rows younger than this are left for the next run (their transaction may still be open). */
export const SETTLE_MS = 30_000;
/** The most raw time one transaction folds in (a backfill after an upgrade takes many)... */
const WINDOW_MS = 15 * 60_000;
/** ...unless the windows before it were empty: each empty one doubles the next, up to this. */
const EMPTY_WINDOW_MAX_MS = 2 * 3_600_000;
const HOUR_MS = 3_600_000;
/** Rollups outlive raw telemetry: the 30-day chart works even when raw rows are kept 7 days. */
export const MIN_ROLLUP_RETENTION_DAYS = 30;

export interface RollupRun {
  /** Windows folded in. */
  windows: number;
  /** Raw heartbeats read. */
  heartbeats: number;
  /** The watermark after the run; undefined when another worker held it. */
  rolledUntil: Date | undefined;
}

/**
 * Where a first run starts: the oldest raw telemetry that can exist (the oldest daily partition,
 * or an older row in the default partition), so an upgrade rolls up the history it keeps.
 */
async function initialWatermark(sql: Sql, now: Date): Promise<Date> {
  const [oldestDay] = await listTelemetryPartitions(sql);
  const [row] = await sql<{ oldest_ms: number | null }[]>`
    select extract(epoch from min(recorded_at))::float8 * 1000 as oldest_ms from telemetry_events_default`;
  const candidates = [now.getTime() - SETTLE_MS];
  if (oldestDay) candidates.push(Date.parse(`${oldestDay}T00:00:00Z`));
  if (row?.oldest_ms) candidates.push(Math.floor(row.oldest_ms / HOUR_MS) * HOUR_MS);
  return new Date(Math.min(...candidates));
}

/**
 * Folds raw telemetry into the hourly rollups up to `now - SETTLE_MS` (now: when the run starts),
 * window by window, for at most `budgetMs` (the next run goes on). One runner at a time: another
 * worker's run finds the watermark locked and returns at once.
 */
export async function rollUpTelemetry(
  sql: Sql,
  options: { now?: Date; budgetMs?: number } = {},
): Promise<RollupRun> {
  const now = options.now ?? new Date();
  const budgetMs = options.budgetMs ?? 45_000;
  const started = Date.now();
  // Only the first run looks for where to start; every later one has its watermark.
  const [hasWatermark] = await sql`select 1 from telemetry_rollup_progress`;
  if (!hasWatermark) {
    const start = await initialWatermark(sql, now);
    await sql`insert into telemetry_rollup_progress (rolled_until) values (${start.toISOString()}::timestamptz)
      on conflict do nothing`;
  }
  const run: RollupRun = { windows: 0, heartbeats: 0, rolledUntil: undefined };
  // Fixed for the run: chasing a moving "now" would fold a few milliseconds at a time forever.
  const target = now.getTime() - SETTLE_MS;
  let windowMs = WINDOW_MS;
  for (;;) {
    const step = await sql.begin(async (tx) => {
      const [progress] = await tx<{ rolled_until_ms: number }[]>`
        select extract(epoch from rolled_until)::float8 * 1000 as rolled_until_ms
        from telemetry_rollup_progress for update skip locked`;
      if (!progress) return { busy: true as const };
      const from = new Date(progress.rolled_until_ms);
      const until = Math.min(from.getTime() + windowMs, target);
      if (until <= from.getTime()) return { busy: false as const, from, until: from, heartbeats: 0 };
      const to = new Date(until);
      const heartbeats = await foldWindow(tx, from, to);
      await tx`update telemetry_rollup_progress set rolled_until = ${to.toISOString()}::timestamptz`;
      return { busy: false as const, from, until: to, heartbeats };
    });
    if (step.busy) return run;
    run.rolledUntil = step.until;
    if (step.until.getTime() === step.from.getTime()) return run;
    run.windows += 1;
    run.heartbeats += step.heartbeats;
    // A fresh install's first run crosses a day or two of nothing in a few windows, not a hundred.
    windowMs = step.heartbeats === 0 ? Math.min(windowMs * 2, EMPTY_WINDOW_MAX_MS) : WINDOW_MS;
    if (Date.now() - started >= budgetMs) return run;
  }
}

/** Merges the raw rows of [from, to) into the hourly rollups; returns how many it read. */
async function foldWindow(sql: TransactionSql, from: Date, to: Date): Promise<number> {
  // Each payload is parsed once (the materialised CTE); a device-hour inserted for the first time
  // (xmax = 0: not an update) is one more device seen in that hour.
  const [row] = await sql<{ heartbeats: number }[]>`
    with events as materialized (
      select device_id, date_trunc('hour', recorded_at) as hour, payload::jsonb as payload
      from telemetry_events
      where recorded_at >= ${from.toISOString()}::timestamptz and recorded_at < ${to.toISOString()}::timestamptz
    ), beats as (
      select device_id, hour, count(*)::int as n from events group by 1, 2
    ), fields as (
      select e.device_id, e.hour, f.path, count(*) as n, sum(f.v) as s, min(f.v) as lo, max(f.v) as hi
      from events e cross join lateral telemetry_numeric_fields(e.payload) f
      group by 1, 2, 3
    ), stats as (
      select device_id, hour, jsonb_object_agg(path, jsonb_build_array(n, s, lo, hi)) as stats
      from fields group by 1, 2
    ), merged as (
      insert into telemetry_hourly as h (device_id, hour, heartbeats, stats)
      select b.device_id, b.hour, b.n, coalesce(s.stats, '{}'::jsonb)
      from beats b left join stats s using (device_id, hour)
      on conflict (device_id, hour) do update set
        heartbeats = h.heartbeats + excluded.heartbeats,
        stats = telemetry_stats_merge(h.stats, excluded.stats)
      returning h.hour, (h.xmax = 0) as fresh
    ), fleet as (
      insert into telemetry_fleet_hourly as f (hour, devices, heartbeats)
      select m.hour, count(*) filter (where m.fresh), (select sum(b.n) from beats b where b.hour = m.hour)
      from merged m group by m.hour
      on conflict (hour) do update set
        devices = f.devices + excluded.devices,
        heartbeats = f.heartbeats + excluded.heartbeats
    )
    select coalesce(sum(n), 0)::int as heartbeats from beats`;
  return row?.heartbeats ?? 0;
}

/** Drops rollups older than the retention (at least MIN_ROLLUP_RETENTION_DAYS); returns rows deleted. */
export async function dropExpiredRollups(sql: Sql, retentionDays: number, now = new Date()): Promise<number> {
  const days = Math.max(retentionDays, MIN_ROLLUP_RETENTION_DAYS);
  const cutoff = new Date(Math.floor((now.getTime() - days * 86_400_000) / HOUR_MS) * HOUR_MS).toISOString();
  const [hourly, fleet] = await sql.begin((tx) => [
    tx`delete from telemetry_hourly where hour < ${cutoff}::timestamptz`,
    tx`delete from telemetry_fleet_hourly where hour < ${cutoff}::timestamptz`,
  ]);
  return hourly.count + fleet.count;
}
