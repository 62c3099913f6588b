import type { Sql } from "../platform/database";
import { isUuid } from "../platform/json-body";
import { keysetPage, parseKeysetCursor } from "../platform/keyset-cursor";

// Where a builder option key lives in a stored payload: the one meaning every reader uses.
export { optionKeyPath, valueAt } from "./field-keys";

// Timestamps go to postgres.js as ISO strings: drizzle's driver replaces its Date serialiser.

export interface TelemetryEvent {
  id: string;
  deviceId: string;
  recordedAt: Date;
  payload: Record<string, unknown>;
}

const MAX_PAGE = 1000;

/**
 * The tables holding telemetry history (raw heartbeats, their rollups and the rollup watermark): what
 * `./outpost backup --without-telemetry` leaves out. Schemas devices announced stay: devices refer to them.
 */
export const TELEMETRY_HISTORY_TABLES = [
  "telemetry_events",
  "telemetry_6min",
  "telemetry_hourly",
  "telemetry_fleet_hourly",
  "telemetry_rollup_progress",
] as const;

/**
 * The INSERT of one telemetry event for the device row a heartbeat statement accepted (the CTE
 * named `accepted`, with an `id` column). modules/heartbeat/service.ts embeds it in its one-statement
 * heartbeat so telemetry is written in the same round trip, but the SQL stays here.
 * The payload is bound as `json` (the column's type), never through `::jsonb`: that cast would
 * parse and re-print the text (the largest part of the insert's cost) and, jsonb's output being
 * wider, push a typical ~1.9 KB heartbeat over the TOAST threshold into pglz compression.
 */
export function insertTelemetryForAccepted(sql: Sql) {
  return sql`insert into telemetry_events (id, device_id, recorded_at, payload)
    select i.event_id, a.id, now(), i.payload::json from accepted a join input i on i.ord = a.ord`;
}

/** Stores one event directly (seeding, tests, the benchmark's ceiling). */
export async function recordTelemetry(
  sql: Sql,
  deviceId: string,
  payload: Record<string, unknown>,
  recordedAt: Date = new Date(),
): Promise<string> {
  const id = Bun.randomUUIDv7();
  await sql`insert into telemetry_events (id, device_id, recorded_at, payload)
    values (${id}::uuid, ${deviceId}::uuid, ${recordedAt.toISOString()}::timestamptz, ${JSON.stringify(payload)}::jsonb)`;
  return id;
}

type EventRow = { id: string; device_id: string; recorded_at: Date; payload: Record<string, unknown> };

function toEvent(row: EventRow): TelemetryEvent {
  return { id: row.id, deviceId: row.device_id, recordedAt: row.recorded_at, payload: row.payload };
}

/** The newest event of a device, or undefined. */
export async function latestTelemetry(sql: Sql, deviceId: string): Promise<TelemetryEvent | undefined> {
  if (!isUuid(deviceId)) return undefined;
  const [row] = await sql<EventRow[]>`
    select id, device_id, recorded_at, payload from telemetry_events
    where device_id = ${deviceId}::uuid order by recorded_at desc limit 1`;
  return row && toEvent(row);
}

/** When the device's oldest event since `since` was recorded (index range scan), or undefined. */
export async function firstTelemetrySince(
  sql: Sql,
  deviceId: string,
  since: Date,
): Promise<Date | undefined> {
  if (!isUuid(deviceId)) return undefined;
  const [row] = await sql<{ first: Date | null }[]>`
    select min(recorded_at) as first from telemetry_events
    where device_id = ${deviceId}::uuid and recorded_at >= ${since.toISOString()}::timestamptz`;
  return row?.first ?? undefined;
}

export interface TelemetryListOptions {
  deviceId?: string;
  from?: Date;
  to?: Date;
  limit?: number;
  /** Keyset cursor from a previous page (`nextCursor`). */
  cursor?: string;
}

/** Events newest first with keyset pagination; filter by device and time range. */
export async function listTelemetryEvents(
  sql: Sql,
  options: TelemetryListOptions,
): Promise<{ events: TelemetryEvent[]; nextCursor: string | undefined }> {
  const limit = Math.max(1, Math.min(options.limit ?? 100, MAX_PAGE));
  if (options.deviceId !== undefined && !isUuid(options.deviceId))
    return { events: [], nextCursor: undefined };
  const after = options.cursor ? parseKeysetCursor(options.cursor, { time: true }) : undefined;
  const rows = await sql<EventRow[]>`
    select id, device_id, recorded_at, payload from telemetry_events
    where true
      ${options.deviceId ? sql`and device_id = ${options.deviceId}::uuid` : sql``}
      ${options.from ? sql`and recorded_at >= ${options.from.toISOString()}::timestamptz` : sql``}
      ${options.to ? sql`and recorded_at < ${options.to.toISOString()}::timestamptz` : sql``}
      ${after ? sql`and (recorded_at, id) < (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
    order by recorded_at desc, id desc limit ${limit + 1}`;
  const { page, nextCursor } = keysetPage(rows, limit, (last) => [last.recorded_at.toISOString(), last.id]);
  return { events: page.map(toEvent), nextCursor };
}

export async function getTelemetryEvent(sql: Sql, id: string): Promise<TelemetryEvent | undefined> {
  if (!isUuid(id)) return undefined;
  const [row] = await sql<
    EventRow[]
  >`select id, device_id, recorded_at, payload from telemetry_events where id = ${id}::uuid`;
  return row && toEvent(row);
}

/** Called by the devices module when a device is deleted (no foreign key on this hot table). */
export async function deleteDeviceTelemetry(sql: Sql, deviceId: string): Promise<number> {
  const result = await sql`delete from telemetry_events where device_id = ${deviceId}::uuid`;
  await sql`delete from telemetry_hourly where device_id = ${deviceId}::uuid`;
  await sql`delete from telemetry_6min where device_id = ${deviceId}::uuid`;
  return result.count;
}

// ---------------------------------------------------------------- partitions

const DAY_MS = 86_400_000;

/** The UTC day of `date` (`YYYY-MM-DD`): what a daily partition is named and bounded by. */
export function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/**
 * Creates the daily partitions of raw telemetry and of the six-minute rollups (./rollups.ts) from
 * yesterday to `daysAhead` days ahead; returns how many were new.
 */
export async function ensureTelemetryPartitions(sql: Sql, daysAhead = 7, now = new Date()): Promise<number> {
  const from = utcDay(new Date(now.getTime() - DAY_MS));
  const to = utcDay(new Date(now.getTime() + daysAhead * DAY_MS));
  const [row] = await sql<{ created: number }[]>`
    select telemetry_ensure_partitions(${from}::date, ${to}::date)
      + daily_partitions_ensure('telemetry_6min', 'bucket', ${from}::date, ${to}::date) as created`;
  return row!.created;
}

/**
 * Drops whole daily partitions older than `retentionDays` (a partition goes once its day ended
 * before the cutoff) and deletes such rows from the default partition. Takes a brief exclusive
 * lock on telemetry_events; `lock_timeout` keeps it from queueing behind long reads (retried next run).
 */
export async function dropExpiredTelemetry(
  sql: Sql,
  retentionDays: number,
  now = new Date(),
  lockTimeoutMs = 5000,
): Promise<number> {
  const cutoff = utcDay(new Date(now.getTime() - retentionDays * DAY_MS));
  const [row] = await sql.begin(async (tx) => {
    await tx`select set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, true)`;
    return tx<{ dropped: number }[]>`select telemetry_drop_partitions_before(${cutoff}::date) as dropped`;
  });
  return row!.dropped;
}

/** The daily partitions that exist, oldest first (`YYYY-MM-DD`). */
export async function listTelemetryPartitions(sql: Sql): Promise<string[]> {
  const rows = await sql<{ relname: string }[]>`
    select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'public.telemetry_events'::regclass and c.relname ~ '^telemetry_events_p[0-9]{8}$'
    order by c.relname`;
  return rows.map((r) => {
    const d = r.relname.slice(-8);
    return `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}`;
  });
}

export { type FeedPosition, telemetryAfter, telemetryArrivedAfter } from "./feed";
export { numericFields } from "./numeric-fields";
export {
  type CompareOp,
  type ReportColumn,
  type ReportQuerySpec,
  reportColumns,
  reportPage,
} from "./report-query";
export { dropExpiredRecentRollups, dropExpiredRollups, rollUpTelemetry } from "./rollups";
export {
  type ChartData,
  chartPriority,
  deviceChartData,
  fleetActivity,
  type Gauges,
  gaugesOf,
  MAX_CHART_FIELDS,
} from "./series";
