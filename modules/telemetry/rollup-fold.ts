/**
 * One rollup window's fold (./rollups.ts schedules the windows): the raw heartbeats of [from, to)
 * are streamed into this process, their numeric fields (./numeric-fields.ts) grouped per device and
 * 6-minute bucket, and the groups merged into `telemetry_6min`, `telemetry_hourly` and
 * `telemetry_fleet_hourly`, all in the caller's transaction.
 *
 * Why here and not in SQL: PostgreSQL had to convert each ~2 KB payload to jsonb and walk it, about
 * 0.2 ms of its CPU a heartbeat, as much as ingesting it; PostgreSQL now only sends the stored text,
 * and parsing it here is a few microseconds (`npm run bench:rollup`, docs/scaling.md).
 */
import type { TransactionSql } from "postgres";
import { jsonTextsParam } from "../platform/database";
import { visitNumericFields } from "./numeric-fields";

const HOUR_MS = 3_600_000;
/** Raw rows fetched per round trip. */
const CURSOR_ROWS = 500;
/**
 * The most groups (device and 6-minute bucket) held at once: bounds the job's memory, about 1.5 KB
 * a group. A window with more is read in passes (foldWindow).
 */
const MAX_GROUPS = 25_000;
/** Rows per merging statement (small enough that building one is a short stretch: see SLICE). */
const WRITE_ROWS = 250;
/**
 * Rows or groups handled between turns of the event loop. In the `all` role the worker shares its
 * process with the web server: a fold's synchronous stretches are what a heartbeat waits behind.
 */
const SLICE = 250;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What a window's fold did. */
export interface FoldCounts {
  /** Raw heartbeats read. */
  heartbeats: number;
  /** Reads of the window's rows, each over a share of the devices. */
  passes: number;
  /**
   * 6-minute and hour rows inserted or updated: one per device and bucket and per device and hour,
   * unless a pass had to merge in parts.
   */
  rowsWritten: number;
}

/** `[count, sum, min, max]` of one field: the shape the rollup tables store per path. */
type FieldStats = [number, number, number, number];

interface Group {
  deviceId: string;
  /** Start of the bucket (6-minute or hour), ms since the epoch. */
  at: number;
  heartbeats: number;
  stats: Map<string, FieldStats>;
}

/** Groups keyed by device, then by bucket start. */
type Groups = Map<string, Map<number, Group>>;

function groupOf(groups: Groups, deviceId: string, at: number): { group: Group; fresh: boolean } {
  let byTime = groups.get(deviceId);
  if (!byTime) {
    byTime = new Map();
    groups.set(deviceId, byTime);
  }
  let group = byTime.get(at);
  const fresh = !group;
  if (!group) {
    group = { deviceId, at, heartbeats: 0, stats: new Map() };
    byTime.set(at, group);
  }
  return { group, fresh };
}

/** Adds `[n, sum, lo, hi]` to a field's stats. */
function add(stats: Map<string, FieldStats>, path: string, n: number, sum: number, lo: number, hi: number) {
  const s = stats.get(path);
  if (!s) stats.set(path, [n, sum, lo, hi]);
  else {
    s[0] += n;
    s[1] += sum;
    if (lo < s[2]) s[2] = lo;
    if (hi > s[3]) s[3] = hi;
  }
}

function addStats(into: Map<string, FieldStats>, from: Iterable<[string, FieldStats]>) {
  for (const [path, [n, sum, lo, hi]] of from) add(into, path, n, sum, lo, hi);
}

/** `{path: [count, sum, min, max]}` as JSON text (JSON.stringify escapes what a key needs). */
function statsJson(stats: Map<string, FieldStats>): string {
  return JSON.stringify(Object.fromEntries(stats));
}

/**
 * Merges the raw rows of [from, to) into the rollups (6-minute buckets from `recentFrom` on). A
 * window with more groups than `maxGroups` is read in passes, each over a share of the devices (by a
 * hash of the id), so that each bucket and hour row is still written once: PostgreSQL reads the
 * window's rows once a pass but sends each row once. An empty window is not read at all.
 */
export async function foldWindow(
  tx: TransactionSql,
  from: Date,
  to: Date,
  recentFrom: Date,
  maxGroups = MAX_GROUPS,
): Promise<FoldCounts> {
  const range = { from: from.toISOString(), to: to.toISOString() };
  const [{ groups }] = await tx<{ groups: number }[]>`
    select count(*)::int as groups from (
      select 1 from telemetry_events
      where recorded_at >= ${range.from}::timestamptz and recorded_at < ${range.to}::timestamptz
      group by device_id, date_bin('6 minutes', recorded_at, 'epoch')) g`;
  // A quarter's margin: a hash shares the devices out only about evenly.
  const passes = Math.ceil((groups * 1.25) / maxGroups);
  const counts: FoldCounts = { heartbeats: 0, passes, rowsWritten: 0 };
  for (let pass = 0; pass < passes; pass++)
    await foldPass(tx, range, { passes, pass, maxGroups }, recentFrom, counts);
  return counts;
}

/** One pass of foldWindow: the rows of the devices whose id hashes to `pass` (of `passes`). */
async function foldPass(
  tx: TransactionSql,
  range: { from: string; to: string },
  { passes, pass, maxGroups }: { passes: number; pass: number; maxGroups: number },
  recentFrom: Date,
  counts: FoldCounts,
): Promise<void> {
  let groups: Groups = new Map();
  let size = 0;
  // Only when a pass finds more groups than it should hold (an uneven share, or rows inserted into the
  // window since the count): merged in parts, which add up the same.
  const flush = async () => {
    const full = groups;
    groups = new Map();
    size = 0;
    counts.rowsWritten += await mergeGroups(tx, full, recentFrom.getTime());
  };
  // date_bin in SQL: a float of seconds since 1970 has too few digits left for microseconds to
  // floor a row just before a boundary into the right bucket.
  const cursor = tx<{ device_id: string; bucket_s: number; payload: unknown }[]>`
    select device_id, date_part('epoch', date_bin('6 minutes', recorded_at, 'epoch')) as bucket_s, payload
    from telemetry_events
    where recorded_at >= ${range.from}::timestamptz and recorded_at < ${range.to}::timestamptz
      ${passes > 1 ? tx`and (uuid_hash(device_id) & 2147483647) % ${passes}::int = ${pass}::int` : tx``}`.cursor(
    CURSOR_ROWS,
  );
  for await (const rows of cursor) {
    for (let i = 0; i < rows.length; i++) {
      if (i > 0 && i % SLICE === 0) await nextTurn();
      const row = rows[i]!;
      const { group, fresh } = groupOf(groups, row.device_id, row.bucket_s * 1000);
      if (fresh) size += 1;
      group.heartbeats += 1;
      const stats = group.stats;
      visitNumericFields(row.payload, (_script, base, field, value) =>
        add(stats, `${base}.${field}`, 1, value, value, value),
      );
    }
    counts.heartbeats += rows.length;
    if (size >= maxGroups) await flush();
  }
  if (size > 0) await flush();
}

/** Merges 6-minute groups into the tier (from `recentFrom` on) and, folded into hours, the hourly tables. */
async function mergeGroups(tx: TransactionSql, groups: Groups, recentFrom: number): Promise<number> {
  const recent: Group[] = [];
  const hours: Groups = new Map();
  let handled = 0;
  for (const [deviceId, byBucket] of groups) {
    if (++handled % SLICE === 0) await nextTurn();
    for (const group of byBucket.values()) {
      if (group.at >= recentFrom) recent.push(group);
      const { group: hour } = groupOf(hours, deviceId, Math.floor(group.at / HOUR_MS) * HOUR_MS);
      hour.heartbeats += group.heartbeats;
      addStats(hour.stats, group.stats);
    }
  }
  let written = 0;
  for (let i = 0; i < recent.length; i += WRITE_ROWS)
    written += await mergeRecent(tx, recent.slice(i, i + WRITE_ROWS));
  const hourRows = [...hours.values()].flatMap((byHour) => [...byHour.values()]);
  const fleet: FleetHours = new Map();
  for (let i = 0; i < hourRows.length; i += WRITE_ROWS)
    written += await mergeHours(tx, hourRows.slice(i, i + WRITE_ROWS), fleet);
  await mergeFleet(tx, fleet);
  return written;
}

/** Which rows: device ids and bucket starts as statement parameters. */
function keyColumns(rows: Group[]) {
  return { ids: rows.map((r) => r.deviceId), at: rows.map((r) => new Date(r.at).toISOString()) };
}

/** The columns of rollup rows as statement parameters. */
function columns(tx: TransactionSql, rows: Group[], keys = keyColumns(rows)) {
  return {
    ...keys,
    heartbeats: rows.map((r) => r.heartbeats),
    stats: jsonTextsParam(
      tx,
      rows.map((r) => statsJson(r.stats)),
    ),
  };
}

/** Returns the rows written. */
async function mergeRecent(tx: TransactionSql, rows: Group[]): Promise<number> {
  const c = columns(tx, rows);
  const result = await tx`
    insert into telemetry_6min as r (device_id, bucket, heartbeats, stats)
    select * from unnest(${c.ids}::uuid[], ${c.at}::text[]::timestamptz[], ${c.heartbeats}::int[], ${c.stats}::jsonb[])
    on conflict (device_id, bucket) do update set
      heartbeats = r.heartbeats + excluded.heartbeats,
      stats = telemetry_stats_merge(r.stats, excluded.stats)`;
  return result.count;
}

/** Per hour: devices seen for the first time in it, and heartbeats (telemetry_fleet_hourly's columns). */
type FleetHours = Map<number, { devices: number; heartbeats: number }>;

/**
 * Adds hour groups to their rows. The rows there are read (and locked) and added to here: PostgreSQL
 * merging two stats objects in SQL (telemetry_stats_merge) cost ~0.2 ms a row, most of the fold. A
 * device-hour with no row yet is one more device seen in that hour (counted into `fleet`). Returns
 * the hour rows written.
 */
async function mergeHours(tx: TransactionSql, rows: Group[], fleet: FleetHours): Promise<number> {
  const index = new Map<string, Group>();
  for (const row of rows) {
    const hour = fleet.get(row.at) ?? { devices: 0, heartbeats: 0 };
    hour.heartbeats += row.heartbeats;
    hour.devices += 1;
    fleet.set(row.at, hour);
    index.set(`${row.deviceId} ${row.at}`, row);
  }
  const keys = keyColumns(rows);
  const stored = await tx<
    { device_id: string; hour_ms: number; heartbeats: number; stats: Record<string, FieldStats> }[]
  >`
    select h.device_id, date_part('epoch', h.hour) * 1000 as hour_ms, h.heartbeats, h.stats
    from unnest(${keys.ids}::uuid[], ${keys.at}::text[]::timestamptz[]) as k(device_id, hour)
    join telemetry_hourly h on h.device_id = k.device_id and h.hour = k.hour
    for update of h`;
  for (const row of stored) {
    const group = index.get(`${row.device_id} ${row.hour_ms}`)!;
    group.heartbeats += row.heartbeats;
    addStats(group.stats, Object.entries(row.stats));
    fleet.get(row.hour_ms)!.devices -= 1;
  }
  const c = columns(tx, rows, keys);
  const result = await tx`
    insert into telemetry_hourly as h (device_id, hour, heartbeats, stats)
    select * from unnest(${c.ids}::uuid[], ${c.at}::text[]::timestamptz[], ${c.heartbeats}::int[], ${c.stats}::jsonb[])
    on conflict (device_id, hour) do update set heartbeats = excluded.heartbeats, stats = excluded.stats`;
  return result.count;
}

async function mergeFleet(tx: TransactionSql, fleet: FleetHours) {
  if (fleet.size === 0) return;
  await tx`
    insert into telemetry_fleet_hourly as f (hour, devices, heartbeats)
    select * from unnest(${[...fleet.keys()].map((ms) => new Date(ms).toISOString())}::text[]::timestamptz[],
      ${[...fleet.values()].map((h) => h.devices)}::int[], ${[...fleet.values()].map((h) => h.heartbeats)}::int[])
    on conflict (hour) do update set
      devices = f.devices + excluded.devices,
      heartbeats = f.heartbeats + excluded.heartbeats`;
}
