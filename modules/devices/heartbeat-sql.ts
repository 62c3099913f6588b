/**
 * The devices side of the heartbeat (modules/heartbeat/service.ts composes it with telemetry and
 * commands into one statement per batch): the `accepted` CTE, and why a heartbeat it did not accept
 * was refused.
 */
import { sha256Hex } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { pgDate } from "../platform/database";
import { authRow, checkCredentials } from "./device-auth";
import { rateLimited } from "./rate-limits";
import type { AnnouncedSchema } from "./validation";

export interface HeartbeatRateLimit {
  heartbeatRateLimit: number;
  heartbeatRateWindowSeconds: number;
}

/**
 * Body of the `accepted` CTE over a batch: `input` is the heartbeat's CTE of one row per heartbeat
 * (`ord, device_id, token_hash, schema_hash, schema_json`, at most one row per device). Updates each
 * device row (last_seen_at, the rate-limit window, the schema when it changed) only if the token hash
 * matches, the device is approved and the rate limit allows, and returns `id, remote_access_requested,
 * ord` of the accepted ones: a refused heartbeat has no row.
 */
export function acceptHeartbeats(sql: Sql, settings: HeartbeatRateLimit) {
  const { heartbeatRateLimit: limit, heartbeatRateWindowSeconds: window } = settings;
  return sql`update devices d set
        last_seen_at = now(),
        heartbeat_window_started_at = case when d.heartbeat_window_started_at > now() - make_interval(secs => ${window})
          then d.heartbeat_window_started_at else now() end,
        heartbeat_window_count = case when d.heartbeat_window_started_at > now() - make_interval(secs => ${window})
          then d.heartbeat_window_count + 1 else 1 end,
        schema = case when i.schema_hash is not null and d.schema_hash is distinct from i.schema_hash
          then i.schema_json::jsonb else d.schema end,
        schema_hash = coalesce(i.schema_hash, d.schema_hash)
      from input i
      where d.id = i.device_id and d.api_token_hash = i.token_hash and d.approval_status = 'approved'
        and (d.heartbeat_window_started_at is null
          or d.heartbeat_window_started_at <= now() - make_interval(secs => ${window})
          or d.heartbeat_window_count < ${limit})
      returning d.id, d.remote_access_requested, i.ord`;
}

/** What the `input` row of a heartbeat holds about its device (see acceptHeartbeats). */
export function heartbeatInput(apiKey: string, schema: AnnouncedSchema | undefined) {
  return {
    tokenHash: sha256Hex(apiKey),
    schemaHash: schema?.hash ?? null,
    schemaJson: schema?.json ?? null,
  };
}

/** Why a heartbeat was not accepted (404/401/403, else 429): always throws. */
export async function refuseHeartbeat(
  sql: Sql,
  deviceId: string,
  apiKey: string | undefined,
  settings: HeartbeatRateLimit,
): Promise<never> {
  const row = await authRow(sql, deviceId);
  checkCredentials(row, apiKey);
  const started = row.heartbeat_window_started_at
    ? pgDate(row.heartbeat_window_started_at).getTime()
    : Date.now();
  throw rateLimited("Heartbeat", settings.heartbeatRateLimit, settings.heartbeatRateWindowSeconds, started);
}
