/**
 * The heartbeat: the one place where devices, telemetry and commands meet in a single SQL statement.
 *
 * Direction: heartbeat → devices, telemetry, commands (never back). Each feature exports its part of
 * the statement as a fragment over one named CTE, `accepted` (`id, remote_access_requested` of the
 * device whose heartbeat was accepted, no row when it was refused):
 *   - devices/heartbeat-sql.ts   acceptHeartbeat()            the body of `accepted` (and refuseHeartbeat)
 *   - telemetry/service.ts       insertTelemetryForAccepted() inserts the event for `accepted.id`
 *   - commands/service.ts        claimCommandsForAccepted()   claims queued commands of `accepted.id`
 * Only this file writes the `with accepted as (...)` that binds them; a feature changing its
 * fragment keeps to those column names.
 */
import {
  type ClaimedRow,
  claimCommandsForAccepted,
  type DeliveredCommand,
  deliveredCommand,
} from "../commands/service";
import {
  acceptHeartbeat,
  authenticateDevice,
  type HeartbeatRateLimit,
  refuseHeartbeat,
  TELEMETRY_LIMITS,
  validateSchemaDefinition,
} from "../devices/service";
import type { Sql } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { isUuid, jsonLimitViolation } from "../platform/json-body";
import { firstInvalidField } from "../platform/schemas";
import { insertTelemetryForAccepted } from "../telemetry/service";
import { heartbeatBody } from "./model";

export interface HeartbeatReply {
  commands: DeliveredCommand[];
  /** Set by the remote-access module when the device should open its tunnel. */
  remote_access_token?: string;
  /** While remote access is requested: poll this often, so the tunnel starts in seconds. */
  poll_interval_seconds?: number;
  /** Fingerprint of the tunnel server's host key, which the agent pins. */
  tunnel_host_key?: string;
}

/** What remote access adds to the reply of a device that should open its tunnel. */
export interface HeartbeatRemoteAccess {
  token: string;
  pollIntervalSeconds: number;
  hostKey: string;
}

export interface HeartbeatOptions {
  settings: HeartbeatRateLimit;
  /** Remote access supplies the token (and fast-poll hint) for devices that requested it. */
  remoteAccess?(deviceId: string): Promise<HeartbeatRemoteAccess | undefined>;
}

const BODY_FIELDS = [
  "telemetry",
  "telemetry.device",
  "telemetry.scripts",
  "telemetry.meta",
  "connection_status",
  "ssh_host_key",
];

/**
 * Validates a heartbeat body (HeartbeatBody, then the size limits: 422 telemetry_limits_exceeded)
 * and returns the payload to store plus the announced schema, if any.
 * `telemetry.meta.schema_definition` is taken out of the stored payload.
 */
export function parseHeartbeat(body: unknown): {
  payloadJson: string;
  schema: Record<string, unknown> | undefined;
} {
  if (!heartbeatBody.Check(body)) {
    const field = firstInvalidField(heartbeatBody, body, BODY_FIELDS);
    if (!field) throw badRequest("The heartbeat body must be a JSON object");
    throw badRequest(`${field} must be a JSON object`, { field });
  }
  const { telemetry, connection_status: status } = body;
  const meta = telemetry.meta;
  let schema: Record<string, unknown> | undefined;
  let storedMeta = meta;
  if (meta && meta.schema_definition !== undefined) {
    schema = validateSchemaDefinition(meta.schema_definition, "telemetry.meta.schema_definition");
    const { schema_definition: _, ...rest } = meta;
    storedMeta = rest;
  }
  const payload: Record<string, unknown> = { ...telemetry };
  if (storedMeta !== meta) payload.meta = storedMeta;
  if (status !== undefined && status !== null && payload.connection_status === undefined)
    payload.connection_status = status;
  const violation = jsonLimitViolation(payload, TELEMETRY_LIMITS);
  if (violation) {
    throw new AppError(
      422,
      "telemetry_limits_exceeded",
      `The telemetry exceeds the maximum ${violation.limit.replace("_", " ")}`,
      violation,
    );
  }
  return { payloadJson: JSON.stringify(payload), schema };
}

type HeartbeatRow = { remote_access_requested: boolean } & { [K in keyof ClaimedRow]: ClaimedRow[K] | null };

/**
 * One heartbeat in ONE statement (one round trip, one implicit transaction): the device row is
 * accepted (see acceptHeartbeat), then the telemetry row is inserted and queued commands are claimed
 * (FOR UPDATE SKIP LOCKED, at most 50). Concurrent heartbeats of one device serialise on the device
 * row, and a claimed command is never claimed again. When the statement accepts nothing, a second
 * read finds out why (404/401/403/429).
 *
 * A heartbeat that claimed no command commits asynchronously (`synchronous_commit = off` for that
 * transaction only): a PostgreSQL crash may lose the last moments of telemetry and last_seen_at —
 * which the next heartbeats restate — but never a command's delivery, whose commit stays durable.
 */
export async function heartbeat(
  sql: Sql,
  deviceId: string,
  apiKey: string | undefined,
  body: unknown,
  options: HeartbeatOptions,
): Promise<HeartbeatReply> {
  if (!isUuid(deviceId)) throw new AppError(404, "device_not_found", "Device not found");
  let parsed: ReturnType<typeof parseHeartbeat>;
  try {
    parsed = parseHeartbeat(body);
  } catch (error) {
    // Authentication errors come first, whatever the body.
    await authenticateDevice(sql, deviceId, apiKey);
    throw error;
  }
  if (!apiKey) return refuseHeartbeat(sql, deviceId, apiKey, options.settings);
  // Nothing claimed: `async_commit` turns off the WAL flush wait for this transaction (see above).
  // (Comments stay out of the SQL text, which PostgreSQL copies on every execution.)
  const rows = await sql<HeartbeatRow[]>`
    with accepted as (${acceptHeartbeat(sql, { deviceId, apiKey, schema: parsed.schema, settings: options.settings })}),
    stored as (${insertTelemetryForAccepted(sql, { id: Bun.randomUUIDv7(), payloadJson: parsed.payloadJson })}),
    claimed as (${claimCommandsForAccepted(sql)})
    select a.remote_access_requested, c.*,
      case when c.id is null then set_config('synchronous_commit', 'off', true) end as async_commit
    from accepted a left join claimed c on true
    order by c.queued_at, c.id`;
  if (rows.length === 0) return refuseHeartbeat(sql, deviceId, apiKey, options.settings);
  const reply: HeartbeatReply = { commands: [] };
  for (const row of rows) if (row.id) reply.commands.push(deliveredCommand(row as ClaimedRow));
  if (rows[0]!.remote_access_requested) {
    const access = await options.remoteAccess?.(deviceId);
    if (access) {
      reply.remote_access_token = access.token;
      reply.poll_interval_seconds = access.pollIntervalSeconds;
      reply.tunnel_host_key = access.hostKey;
    }
  }
  return reply;
}
