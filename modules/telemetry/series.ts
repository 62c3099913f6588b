/**
 * Chart reads of stored telemetry for the operator console (device Telemetry tab, dashboard fleet
 * chart). Time-bucketed in SQL so a chart never ships more than a few hundred points per field,
 * however many heartbeats the range holds. See ./service.ts for the table and its partitions.
 */
import type { Sql } from "../platform/database";
import { isUuid } from "../platform/json-body";
import { optionKeyPath, valueAt } from "./field-keys";
import { asNumber } from "./numeric-fields";
import { BUCKET_MS, RECENT_MS, rollupProgress } from "./rollups";

export const MAX_CHART_FIELDS = 12;
/**
 * Heartbeats a raw chart reads at most (see deviceChartData): beyond, each bucket averages its first
 * few (5 per bucket of 240); parsing each payload is what a raw chart costs. Up to 6 hours at the
 * agent's default 30 s (720) every heartbeat is read; a day is read from the 6-minute rollups.
 */
export const MAX_READ = 1200;

/** The scripts every agent ships (agent/builtin-scripts; a test keeps the two lists equal). */
export const AGENT_BUILTIN_SCRIPTS = ["cpu", "disk", "load", "memory", "network", "uptime"] as const;
const BUILTIN = new Set<string>(AGENT_BUILTIN_SCRIPTS);
/** Settings and totals rather than measurements: they rarely move, so they chart last. */
const STATIC_FIELD = /\.(cores|interval_ms|total_bytes|total|count_total|uptime_s|boot_time)$|_total$/;

/**
 * Which numeric fields a device page charts first (lower first): fields of scripts an operator
 * installed (why they installed them), then percentages, then load, then other measurements, then
 * settings and totals such as `cpu.cores` or `memory.total_bytes`.
 */
export function chartPriority(label: string): number {
  const script = label.slice(0, label.indexOf("."));
  if (!BUILTIN.has(script)) return 0;
  if (STATIC_FIELD.test(label)) return 4;
  if (/_pct$|percent/.test(label)) return 1;
  if (/\.load_\d+m$/.test(label)) return label.endsWith("load_1m") ? 2 : 3;
  return 3;
}

export interface Gauges {
  cpu: { value: number; label: string } | undefined;
  memory: { value: number; label: string } | undefined;
  disk: { value: number; label: string } | undefined;
}

/** The first of the fields (builder option keys) that holds a number, with its gauge label. */
function first(payload: unknown, candidates: [string, string][]) {
  for (const [key, label] of candidates) {
    const value = asNumber(valueAt(payload, optionKeyPath(key)));
    if (value !== undefined) return { value, label };
  }
  return undefined;
}

/**
 * The latest CPU, memory and disk figures from the agent's built-in scripts (cpu, memory, disk),
 * falling back to the older `pcp` script's fields.
 */
export function gaugesOf(payload: Record<string, unknown> | undefined): Gauges {
  return {
    cpu: first(payload, [
      ["cpu.usage_pct", "CPU busy %"],
      ["pcp.cpu_pct", "CPU busy %"],
      ["load.load_1m", "Load (1 min)"],
      ["pcp.load_1m", "Load (1 min)"],
    ]),
    memory: first(payload, [
      ["memory.used_pct", "Memory used %"],
      ["pcp.memory_used_pct", "Memory used %"],
      ["pcp.memory_used", "Memory used %"],
    ]),
    disk: first(payload, [
      ["disk.root_used_pct", "Disk used % (/)"],
      ["disk.max_used_pct", "Disk used % (fullest)"],
      ["pcp.disk_full_pct", "Disk full %"],
    ]),
  };
}

export interface ChartData {
  /** Bucket starts, Unix seconds. */
  t: number[];
  /** One array per field, aligned with t; null where the bucket had no numeric value. */
  series: (number | null)[][];
  /** Heartbeats in the range. */
  events: number;
  stepSeconds: number;
}

/**
 * Per-bucket averages of numeric fields (builder option keys, read at `optionKeyPath`; the rollups
 * hold them under that path, dotted) of one device over [from, to). Over more than two
 * days they come from the hourly rollups; over a day or two from the 6-minute rollups where those
 * cover the range; otherwise from raw heartbeats, through the (device_id, recorded_at) index and only
 * the partitions of the range.
 */
export async function deviceChartData(
  sql: Sql,
  deviceId: string,
  keys: string[],
  from: Date,
  to: Date,
  buckets = 240,
): Promise<ChartData> {
  const fields = keys.slice(0, MAX_CHART_FIELDS).map(optionKeyPath);
  const span = to.getTime() - from.getTime();
  const tier = isUuid(deviceId) && fields.length > 0 ? rollupTierFor(span, buckets) : undefined;
  if (tier) {
    const progress = await rollupProgress(sql);
    // The 6-minute tier holds the last RECENT_MS, complete from `recentFrom` (its upgrade) on.
    const covered =
      tier === HOURLY ||
      from.getTime() >=
        Math.max(progress?.recentFrom?.getTime() ?? Number.POSITIVE_INFINITY, Date.now() - RECENT_MS);
    if (covered)
      return rolledUpChartData(sql, tier, deviceId, fields, from, to, buckets, progress?.rolledUntil);
  }
  const stepSeconds = Math.max(1, Math.ceil((to.getTime() - from.getTime()) / 1000 / buckets));
  if (!isUuid(deviceId) || fields.length === 0) return { t: [], series: [], events: 0, stepSeconds };
  const fromIso = from.toISOString();
  const toIso = to.toISOString();
  const [counted] = await sql<{ total: number }[]>`
    select count(*)::int as total from telemetry_events
    where device_id = ${deviceId}::uuid and recorded_at >= ${fromIso}::timestamptz and recorded_at < ${toIso}::timestamptz`;
  const total = counted?.total ?? 0;
  // Work is bounded: up to MAX_READ heartbeats are averaged exactly; beyond that each bucket averages
  // its first few heartbeats (an index range scan per bucket), so a dense day costs what a sparse one does.
  const perBucket = Math.max(1, Math.ceil(MAX_READ / buckets));
  // The payloads are parsed here, not in PostgreSQL: its json-to-jsonb parse of an agent's ~2 KB
  // payload costs about three times what reading it and JSON.parse cost a web process
  // (docs/console.md). Read CHART_ROWS_PER_READ at a time: a payload may be up to 256 KB.
  const query =
    total <= MAX_READ
      ? sql<ChartRow[]>`
    select extract(epoch from date_bin(make_interval(secs => ${stepSeconds}), recorded_at, ${fromIso}::timestamptz))::float8 as t,
      payload::text as payload
    from telemetry_events
    where device_id = ${deviceId}::uuid and recorded_at >= ${fromIso}::timestamptz and recorded_at < ${toIso}::timestamptz`
      : sql<ChartRow[]>`
    select extract(epoch from b.start)::float8 as t, e.payload::text as payload
    from generate_series(${fromIso}::timestamptz, ${toIso}::timestamptz, make_interval(secs => ${stepSeconds})) as b(start)
    cross join lateral (
      select payload from telemetry_events
      where device_id = ${deviceId}::uuid and recorded_at >= b.start
        and recorded_at < least(b.start + make_interval(secs => ${stepSeconds}), ${toIso}::timestamptz)
      order by recorded_at limit ${perBucket}
    ) e`;
  const averages = new BucketAverages(fields);
  for await (const rows of query.cursor(CHART_ROWS_PER_READ)) averages.add(rows);
  return { ...averages.result(), events: total, stepSeconds };
}

/** Rows of a raw chart read at a time: at most 64 MB of the largest heartbeats (256 KB). */
const CHART_ROWS_PER_READ = 256;

/** A heartbeat of a raw chart: its bucket's start (Unix seconds) and its payload's JSON text. */
interface ChartRow {
  t: number;
  payload: string;
}

/**
 * Per bucket, the average of each field's numeric values (the rule of SQL's telemetry_number, which
 * the rollups use), rounded to 3 decimals; null where none was numeric. Rows come in any order (no
 * ORDER BY: sorting the payloads cost PostgreSQL more than this sorts the buckets).
 */
class BucketAverages {
  /** Per bucket start: per field, its sum and count of numeric values. */
  private readonly buckets = new Map<number, { sums: number[]; counts: number[] }>();

  constructor(readonly parts: string[][]) {}

  add(rows: ChartRow[]): void {
    for (const row of rows) {
      let bucket = this.buckets.get(row.t);
      if (!bucket) {
        bucket = { sums: this.parts.map(() => 0), counts: this.parts.map(() => 0) };
        this.buckets.set(row.t, bucket);
      }
      const payload: unknown = JSON.parse(row.payload);
      for (let i = 0; i < this.parts.length; i++) {
        const value = asNumber(valueAt(payload, this.parts[i]!));
        if (value === undefined) continue;
        bucket.sums[i]! += value;
        bucket.counts[i]!++;
      }
    }
  }

  result(): { t: number[]; series: (number | null)[][] } {
    const t = [...this.buckets.keys()].sort((a, b) => a - b);
    const series = this.parts.map((_, i) =>
      t.map((start) => {
        const { sums, counts } = this.buckets.get(start)!;
        return counts[i] === 0 ? null : Math.round((sums[i]! / counts[i]!) * 1000) / 1000;
      }),
    );
    return { t, series };
  }
}

/** Per field, the bucket averages `v0`, `v1`, … of the rows, rounded to 3 decimals (null: no value). */
function seriesOf(rows: Record<string, number | null>[], fieldCount: number): (number | null)[][] {
  return Array.from({ length: fieldCount }, (_, i) =>
    rows.map((row) => {
      const v = row[`v${i}`];
      return v === null || v === undefined ? null : Math.round(Number(v) * 1000) / 1000;
    }),
  );
}

const HOUR_MS = 3_600_000;
/** Ranges longer than this read the hourly rollups (./rollups.ts) rather than raw heartbeats. */
export const ROLLUP_RANGE_MS = 48 * HOUR_MS;

/** Raw rows after the rollups' watermark a rolled-up chart adds, at most this far back. */
const TAIL_MS = 24 * HOUR_MS;

/** A rollup table a chart reads (./rollups.ts): its bucket column and the bucket's length. */
interface RollupTier {
  table: "telemetry_hourly" | "telemetry_6min";
  column: "hour" | "bucket";
  unitMs: number;
}
const HOURLY: RollupTier = { table: "telemetry_hourly", column: "hour", unitMs: HOUR_MS };
const SIX_MINUTES: RollupTier = { table: "telemetry_6min", column: "bucket", unitMs: BUCKET_MS };

/** The rollup tier a chart over `span` reads: hours beyond two days, 6-minute buckets from a day. */
function rollupTierFor(span: number, buckets: number): RollupTier | undefined {
  if (span > ROLLUP_RANGE_MS) return HOURLY;
  if (span >= buckets * BUCKET_MS) return SIX_MINUTES;
  return undefined;
}

/**
 * Per-bucket averages of numeric fields of one device from a rollup tier: buckets of whole tier
 * units (24 hours: 240 of 6 minutes; 7 days: 168 of one hour; 30 days: 240 of three), each the
 * average of every heartbeat in it (sum of sums over sum of counts). What the job has not folded in
 * yet (after `watermark`: the last six minutes or so; up to a day if it stopped) is read from raw
 * rows, so the chart is as current as the raw one.
 */
async function rolledUpChartData(
  sql: Sql,
  tier: RollupTier,
  deviceId: string,
  fields: string[][],
  from: Date,
  to: Date,
  buckets: number,
  watermark: Date | undefined,
): Promise<ChartData> {
  const stepUnits = Math.max(1, Math.ceil((to.getTime() - from.getTime()) / tier.unitMs / buckets));
  const startMs = Math.floor(from.getTime() / tier.unitMs) * tier.unitMs;
  const start = new Date(startMs).toISOString();
  const end = to.toISOString();
  const tailFrom = new Date(
    Math.max(startMs, to.getTime() - TAIL_MS, watermark?.getTime() ?? 0),
  ).toISOString();
  const unitSeconds = tier.unitMs / 1000;
  const rolled = fields.map(
    (field, i) =>
      sql`, (stats -> ${field.join(".")} ->> 1)::float8 as ${sql(`s${i}`)}, (stats -> ${field.join(".")} ->> 0)::float8 as ${sql(`c${i}`)}`,
  );
  const raw = fields.map(
    (field, i) =>
      sql`, telemetry_number(e.payload #> ${field}::text[]) as ${sql(`s${i}`)}, (telemetry_number(e.payload #> ${field}::text[]) is not null)::int::float8 as ${sql(`c${i}`)}`,
  );
  const averages = fields.map(
    (_, i) => sql`, sum(${sql(`s${i}`)}) / nullif(sum(${sql(`c${i}`)}), 0) as ${sql(`v${i}`)}`,
  );
  const rows = await sql<({ t: number; n: number } & Record<string, number | null>)[]>`
    with units as (
      select ${sql(tier.column)} as at, heartbeats ${rolled} from ${sql(tier.table)}
      where device_id = ${deviceId}::uuid and ${sql(tier.column)} >= ${start}::timestamptz
        and ${sql(tier.column)} < ${end}::timestamptz
      union all
      select date_bin(make_interval(secs => ${unitSeconds}), e.recorded_at, 'epoch'), 1 ${raw}
      from (
        select recorded_at, payload::jsonb as payload from telemetry_events
        where device_id = ${deviceId}::uuid and recorded_at >= ${tailFrom}::timestamptz
          and recorded_at < ${end}::timestamptz
        offset 0
      ) e
    )
    select extract(epoch from date_bin(make_interval(secs => ${stepUnits * unitSeconds}), at, ${start}::timestamptz))::float8 as t,
      sum(heartbeats)::int as n ${averages}
    from units group by 1 order by 1`;
  return {
    t: rows.map((row) => row.t),
    series: seriesOf(rows, fields.length),
    events: rows.reduce((sum, row) => sum + row.n, 0),
    stepSeconds: stepUnits * unitSeconds,
  };
}

/**
 * Devices that sent at least one heartbeat per hour over the last 24 hours (dashboard chart), from
 * the rollups: a few rows whatever the fleet's size; the current hour as far as it is rolled up.
 */
export async function fleetActivity(
  sql: Sql,
  hours = 24,
  now = new Date(),
): Promise<{ t: number[]; devices: number[] }> {
  const end = new Date(Math.ceil(now.getTime() / HOUR_MS) * HOUR_MS);
  const start = new Date(end.getTime() - hours * HOUR_MS);
  const rows = await sql<{ t: number; n: number }[]>`
    select extract(epoch from hour)::float8 as t, devices as n from telemetry_fleet_hourly
    where hour >= ${start.toISOString()}::timestamptz and hour < ${end.toISOString()}::timestamptz`;
  const byT = new Map(rows.map((r) => [r.t, r.n]));
  const t: number[] = [];
  const devices: number[] = [];
  for (let at = start.getTime() / 1000; at < end.getTime() / 1000; at += 3600) {
    t.push(at);
    devices.push(byT.get(at) ?? 0);
  }
  return { t, devices };
}
