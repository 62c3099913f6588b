/**
 * The devices side of the heartbeat (modules/heartbeat/service.ts composes it with telemetry and
 * commands into one statement): the `accepted` CTE, and why a heartbeat it did not accept was refused.
 */
import { sha256Hex } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { pgDate } from "../platform/database";
import { authRow, checkCredentials } from "./device-auth";
import { rateLimited } from "./rate-limits";
import { schemaHash } from "./validation";

export interface HeartbeatRateLimit {
  heartbeatRateLimit: number;
  heartbeatRateWindowSeconds: number;
}

/**
 * Body of the `accepted` CTE: updates the device row (last_seen_at, the rate-limit window, the
 * schema when it changed) only if the token hash matches, the device is approved and the rate limit
 * allows, and returns `id, remote_access_requested` — no row when the heartbeat is refused.
 */
export function acceptHeartbeat(
  sql: Sql,
  input: {
    deviceId: string;
    apiKey: string;
    schema: Record<string, unknown> | undefined;
    settings: HeartbeatRateLimit;
  },
) {
  const { heartbeatRateLimit: limit, heartbeatRateWindowSeconds: window } = input.settings;
  const schemaJson = input.schema ? JSON.stringify(input.schema) : null;
  const hash = input.schema ? schemaHash(input.schema) : null;
  return sql`update devices set
        last_seen_at = now(),
        heartbeat_window_started_at = case when heartbeat_window_started_at > now() - make_interval(secs => ${window})
          then heartbeat_window_started_at else now() end,
        heartbeat_window_count = case when heartbeat_window_started_at > now() - make_interval(secs => ${window})
          then heartbeat_window_count + 1 else 1 end,
        schema = case when ${hash}::text is not null and schema_hash is distinct from ${hash}::text
          then ${schemaJson}::jsonb else schema end,
        schema_hash = coalesce(${hash}::text, schema_hash)
      where id = ${input.deviceId}::uuid and api_token_hash = ${sha256Hex(input.apiKey)} and approval_status = 'approved'
        and (heartbeat_window_started_at is null
          or heartbeat_window_started_at <= now() - make_interval(secs => ${window})
          or heartbeat_window_count < ${limit})
      returning id, remote_access_requested`;
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
