import type { Sql } from "../platform/database";
import type { TelemetryEvent } from "./service";

export interface FeedPosition {
  recordedAt: Date;
  id: string;
}

/** The largest UUIDv7 generated at or before `time` (ids embed their creation time in ms). */
export function uuidv7Ceiling(time: Date): string {
  const hex = `${Math.max(0, time.getTime()).toString(16).padStart(12, "0")}${"f".repeat(20)}`;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Telemetry in id order after `after` (exclusive) whose ids were generated up to `until`, for
 * consumers that follow the stream (alert evaluation). Ids are UUIDv7, time-ordered, so this walks
 * the primary key's index (no sort, no scan of the day); the `recorded_at` bound only prunes
 * partitions. Filtering and ordering by the same key matters: an event is never passed over because
 * a later one committed first. `until` keeps the consumer behind heartbeats still committing.
 */
export async function telemetryAfter(
  sql: Sql,
  after: FeedPosition,
  until: Date,
  limit: number,
): Promise<TelemetryEvent[]> {
  const rows = await sql<
    { id: string; device_id: string; recorded_at: Date; payload: Record<string, unknown> }[]
  >`
    select id, device_id, recorded_at, payload from telemetry_events
    where id > ${after.id}::uuid and id <= ${uuidv7Ceiling(until)}::uuid
      and recorded_at > ${after.recordedAt.toISOString()}::timestamptz - interval '5 minutes'
    order by id limit ${limit}`;
  return rows.map((r) => ({
    id: r.id,
    deviceId: r.device_id,
    recordedAt: r.recorded_at,
    payload: r.payload,
  }));
}

/**
 * Whether telemetry after `after` has arrived that a follower stopping at `until` has not read yet (its
 * ids were generated after `until`): what it has still to read once that settles.
 */
export async function telemetryArrivedAfter(sql: Sql, after: FeedPosition, until: Date): Promise<boolean> {
  const ceiling = uuidv7Ceiling(until);
  const from = after.id > ceiling ? after.id : ceiling; // both lower-case hex: text order is id order
  const [row] = await sql<{ arrived: boolean }[]>`
    select exists (select 1 from telemetry_events
      where id > ${from}::uuid and recorded_at > ${until.toISOString()}::timestamptz - interval '5 minutes') as arrived`;
  return row!.arrived;
}
