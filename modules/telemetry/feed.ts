import type { Sql } from "../platform/database";
import { pgDate } from "../platform/database";
import type { TelemetryEvent } from "./service";

export interface FeedPosition {
  recordedAt: Date;
  id: string;
}

/**
 * Telemetry in arrival order after `after` (exclusive), up to `until`, for consumers that follow the
 * stream (alert evaluation). Ordered by (recorded_at, id), the primary key, so a consumer can keep
 * its position as that pair. `until` lets it stay behind heartbeats still committing.
 */
export async function telemetryAfter(
  sql: Sql,
  after: FeedPosition | null,
  until: Date,
  limit: number,
): Promise<TelemetryEvent[]> {
  const at = after?.recordedAt.toISOString() ?? null;
  const rows = await sql<
    { id: string; device_id: string; recorded_at: Date; payload: Record<string, unknown> }[]
  >`
    select id, device_id, recorded_at, payload from telemetry_events
    where recorded_at <= ${until.toISOString()}::timestamptz
      and (${at}::timestamptz is null or (recorded_at, id) > (${at}::timestamptz, ${after?.id ?? null}::uuid))
      and recorded_at > coalesce(${at}::timestamptz, now() - interval '1 hour') - interval '1 second'
    order by recorded_at, id limit ${limit}`;
  return rows.map((r) => ({
    id: r.id,
    deviceId: r.device_id,
    recordedAt: pgDate(r.recorded_at),
    payload: r.payload,
  }));
}
