/**
 * Telemetry rollups: what charts of a day or more and the dashboard read instead of raw heartbeats.
 *
 * The `telemetry_rollup` job (every minute) folds raw rows into two tiers of the same shape (per
 * device and bucket: heartbeats, and `[count, sum, min, max]` per numeric field):
 * `telemetry_6min` (6-minute buckets, the last RECENT_MS; the 24-hour chart) and `telemetry_hourly`
 * (UTC hours, kept with the telemetry retention; 7- and 30-day charts), plus `telemetry_fleet_hourly`
 * (per hour: devices seen, heartbeats). It folds (./rollup-fold.ts) raw rows after its watermark
 * (`telemetry_rollup_progress.rolled_until`) in windows that end on a 6-minute boundary (at most
 * WINDOW_MS; longer after empty ones) and merges each window into the buckets and hours it touches,
 * watermark and rollups in one transaction: a crash repeats nothing and loses nothing.
 * Because windows end on bucket boundaries, a 6-minute bucket is written once, and an hour at most
 * ten times, however often the job runs; readers add the raw rows after the watermark (the last
 * six minutes or so). Windows end SETTLE_MS before now, so a heartbeat transaction still open when
 * the window closes (they take milliseconds) is not skipped. Rows inserted later with an older
 * `recorded_at` (seeding) are not rolled up.
 */
import type { Sql } from "../platform/database";
import { foldWindow } from "./rollup-fold";
import { listTelemetryPartitions, utcDay } from "./service";

/** Raw rows younger than this are left for the next run (their transaction may still be open). */
export const SETTLE_MS = 30_000;
/** The fine tier's bucket: the 24-hour chart's 240 buckets. Windows end on its boundaries. */
export const BUCKET_MS = 6 * 60_000;
/** The most raw time one transaction folds in (a backfill after an upgrade takes many)... */
const WINDOW_MS = 3 * BUCKET_MS;
/** ...unless the windows before it were empty: each empty one doubles the next, up to this. */
const EMPTY_WINDOW_MAX_MS = 2 * 3_600_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The 6-minute tier holds at least this much (its daily partitions are dropped when older). */
export const RECENT_MS = 2 * DAY_MS;
/** Rollups outlive raw telemetry: the 30-day chart works even when raw rows are kept 7 days. */
export const MIN_ROLLUP_RETENTION_DAYS = 30;

/** The start of the 6-minute bucket `ms` falls in. */
export const bucketFloor = (ms: number) => Math.floor(ms / BUCKET_MS) * BUCKET_MS;

export interface RollupRun {
  /** Windows folded in. */
  windows: number;
  /** Raw heartbeats read. */
  heartbeats: number;
  /** Reads of the windows' rows: more than one a window when its devices did not fit in memory at once. */
  passes: number;
  /** Rollup rows (6-minute and hourly) inserted or updated. */
  rowsWritten: number;
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
  const candidates = [bucketFloor(now.getTime() - SETTLE_MS)];
  if (oldestDay) candidates.push(Date.parse(`${oldestDay}T00:00:00Z`));
  if (row?.oldest_ms) candidates.push(Math.floor(row.oldest_ms / HOUR_MS) * HOUR_MS);
  return new Date(Math.min(...candidates));
}

export interface RollupProgress {
  /** Raw telemetry before this is in the rollups. */
  rolledUntil: Date;
  /** The 6-minute tier is complete from here on; undefined when not recorded (charts then read raw rows). */
  recentFrom: Date | undefined;
}

/** The job's watermark, or undefined before its first run. */
export async function rollupProgress(sql: Sql): Promise<RollupProgress | undefined> {
  const [row] = await sql<{ rolled_until_ms: number; recent_from_ms: number | null }[]>`
    select extract(epoch from rolled_until)::float8 * 1000 as rolled_until_ms,
      extract(epoch from recent_from)::float8 * 1000 as recent_from_ms
    from telemetry_rollup_progress`;
  if (!row) return undefined;
  return {
    rolledUntil: new Date(row.rolled_until_ms),
    recentFrom: row.recent_from_ms === null ? undefined : new Date(row.recent_from_ms),
  };
}

/**
 * Folds raw telemetry into the rollups up to the last 6-minute boundary before `now - SETTLE_MS`
 * (now: when the run starts), window by window, for at most `budgetMs` (the next run goes on), holding
 * at most `maxGroups` device-buckets in memory (foldWindow's default unless given). One
 * runner at a time: another worker's run finds the watermark locked and returns at once.
 */
export async function rollUpTelemetry(
  sql: Sql,
  options: { now?: Date; budgetMs?: number; maxGroups?: number } = {},
): Promise<RollupRun> {
  const now = options.now ?? new Date();
  const budgetMs = options.budgetMs ?? 45_000;
  const started = Date.now();
  // Only the first run looks for where to start; every later one has its watermark.
  const [hasWatermark] = await sql`select 1 from telemetry_rollup_progress`;
  if (!hasWatermark) {
    const start = await initialWatermark(sql, now);
    await sql`insert into telemetry_rollup_progress (rolled_until, recent_from)
      values (${start.toISOString()}::timestamptz, ${start.toISOString()}::timestamptz) on conflict do nothing`;
  }
  const run: RollupRun = { windows: 0, heartbeats: 0, passes: 0, rowsWritten: 0, rolledUntil: undefined };
  // Fixed for the run: chasing a moving "now" would fold a few milliseconds at a time forever.
  const target = bucketFloor(now.getTime() - SETTLE_MS);
  const recentFrom = new Date(bucketFloor(now.getTime() - RECENT_MS));
  let windowMs = WINDOW_MS;
  for (;;) {
    const step = await sql.begin(async (tx) => {
      const [progress] = await tx<{ rolled_until_ms: number }[]>`
        select extract(epoch from rolled_until)::float8 * 1000 as rolled_until_ms
        from telemetry_rollup_progress for update skip locked`;
      if (!progress) return { busy: true as const };
      const from = new Date(progress.rolled_until_ms);
      // On a bucket boundary (a watermark from before the 6-minute tier may not be on one).
      const until = bucketFloor(Math.min(from.getTime() + windowMs, target));
      if (until <= from.getTime())
        return { busy: false as const, from, until: from, heartbeats: 0, passes: 0, rowsWritten: 0 };
      const to = new Date(until);
      const counts = await foldWindow(tx, from, to, recentFrom, options.maxGroups);
      await tx`update telemetry_rollup_progress set rolled_until = ${to.toISOString()}::timestamptz`;
      return { busy: false as const, from, until: to, ...counts };
    });
    if (step.busy) return run;
    run.rolledUntil = step.until;
    if (step.until.getTime() === step.from.getTime()) return run;
    run.windows += 1;
    run.heartbeats += step.heartbeats;
    run.passes += step.passes;
    run.rowsWritten += step.rowsWritten;
    // A fresh install's first run crosses a day or two of nothing in a few windows, not a hundred.
    windowMs = step.heartbeats === 0 ? Math.min(windowMs * 2, EMPTY_WINDOW_MAX_MS) : WINDOW_MS;
    if (Date.now() - started >= budgetMs) return run;
  }
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

/**
 * Drops the 6-minute tier's daily partitions whose day ended more than RECENT_MS ago (and such rows
 * of its default partition); returns how many partitions it dropped.
 */
export async function dropExpiredRecentRollups(sql: Sql, now = new Date()): Promise<number> {
  const cutoff = utcDay(new Date(now.getTime() - RECENT_MS));
  const [row] = await sql<{ dropped: number }[]>`
    select daily_partitions_drop_before('telemetry_6min', 'bucket', ${cutoff}::date) as dropped`;
  return row!.dropped;
}
