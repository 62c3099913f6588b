import type { Sql } from "../platform/database";
import { pgDate } from "../platform/database";
import type { TelemetryEvent } from "./service";

export interface FeedPosition {
  recordedAt: Date;
  id: string;
}

/**
 * Telemetry in id order after `after` (exclusive), up to `until`, for consumers that follow the
 * stream (alert evaluation). Ids are UUIDv7, time-ordered, so this walks the primary key's index
 * (no sort, no scan of the day); `recorded_at` bounds only prune partitions. `until` lets the
 * consumer stay behind heartbeats still committing. A device's events come in its own order.
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
    where id > ${after.id}::uuid
      and recorded_at > ${after.recordedAt.toISOString()}::timestamptz - interval '5 minutes'
      and recorded_at <= ${until.toISOString()}::timestamptz
    order by id limit ${limit}`;
  return rows.map((r) => ({
    id: r.id,
    deviceId: r.device_id,
    recordedAt: pgDate(r.recorded_at),
    payload: r.payload,
  }));
}
