/**
 * The devices side of the heartbeat (modules/heartbeat/service.ts composes it with telemetry and
 * commands into one statement per batch): the `accepted` CTE, and why a heartbeat it did not accept
 * was refused.
 */
import { sha256Hex } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { authRow, checkCredentials } from "./device-auth";
import { rateLimited } from "./rate-limits";
import { storeTelemetrySchemas } from "./telemetry-schemas";
import type { AnnouncedSchema } from "./validation";

export interface HeartbeatRateLimit {
  heartbeatRateLimit: number;
  heartbeatRateWindowSeconds: number;
}

/**
 * Body of the `accepted` CTE over a batch: `input` is the heartbeat's CTE of one row per heartbeat
 * (`ord, device_id, token_hash, schema_hash`, at most one row per device). Updates each device row
 * (last_seen_at, the rate-limit window) only if the token hash matches, the device is approved and the
 * rate limit allows, and returns `id, remote_access_requested, ord, schema_stale` of the accepted
 * ones: a refused heartbeat has no row. `schema_stale`: the heartbeat announced a schema whose hash is
 * not the device's, which storeAnnouncedSchemas then stores (the schema's text is sent only then, not
 * with every heartbeat that announces it).
 */
export function acceptHeartbeats(sql: Sql, settings: HeartbeatRateLimit) {
  const { heartbeatRateLimit: limit, heartbeatRateWindowSeconds: window } = settings;
  return sql`update devices d set
        last_seen_at = now(),
        heartbeat_window_started_at = case when d.heartbeat_window_started_at > now() - make_interval(secs => ${window})
          then d.heartbeat_window_started_at else now() end,
        heartbeat_window_count = case when d.heartbeat_window_started_at > now() - make_interval(secs => ${window})
          then d.heartbeat_window_count + 1 else 1 end
      from input i
      where d.id = i.device_id and d.api_token_hash = i.token_hash and d.approval_status = 'approved'
        and (d.heartbeat_window_started_at is null
          or d.heartbeat_window_started_at <= now() - make_interval(secs => ${window})
          or d.heartbeat_window_count < ${limit})
      returning d.id, d.remote_access_requested, i.ord,
        i.schema_hash is not null and d.schema_hash is distinct from i.schema_hash as schema_stale`;
}

/** A schema a heartbeat announced that its device does not have yet. */
export interface StaleSchema extends AnnouncedSchema {
  deviceId: string;
}

/** Stores the announced schemas the batch statement found stale (see acceptHeartbeats). */
export async function storeAnnouncedSchemas(sql: Sql, schemas: StaleSchema[]): Promise<void> {
  if (schemas.length === 0) return;
  await storeTelemetrySchemas(sql, schemas);
  await sql`
    update devices d set schema_hash = s.hash
    from unnest(${schemas.map((s) => s.deviceId)}::uuid[], ${schemas.map((s) => s.hash)}::text[]) as s(id, hash)
    where d.id = s.id and d.schema_hash is distinct from s.hash`;
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
  const started = row.heartbeat_window_started_at ? row.heartbeat_window_started_at.getTime() : Date.now();
  throw rateLimited("Heartbeat", settings.heartbeatRateLimit, settings.heartbeatRateWindowSeconds, started);
}
