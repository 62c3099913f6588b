/**
 * The heartbeat: the one place where devices, telemetry and commands meet, in one SQL statement per
 * batch of concurrent heartbeats.
 *
 * Direction: heartbeat → devices, telemetry, commands (never back). Each feature exports its part of
 * the statement as a fragment over two named CTEs: `input` (`ord, device_id, token_hash, schema_hash,
 * event_id, payload, host_key`, one row per heartbeat of the batch) and `accepted` (`id,
 * remote_access_requested, ord, schema_stale` of each device whose heartbeat was accepted, no row when
 * refused):
 *   - devices/heartbeat-sql.ts   acceptHeartbeats()           the body of `accepted` (and refuseHeartbeat)
 *   - devices/sightings.ts       recordSightings()            one `device_sightings` row of the accepted ids
 *   - telemetry/service.ts       insertTelemetryForAccepted() inserts the event of each `accepted` row
 *   - commands/service.ts        claimCommandsForAccepted()   claims queued commands of `accepted.id`
 *   - terminal/host-keys.ts      staleHostKeys()              the `ord`s whose reported host key needs writing
 * Only this file writes the `with input as (...), accepted as (...)` that binds them; a feature
 * changing its fragment keeps to those column names.
 */
import {
  type ClaimedRow,
  claimCommandsForAccepted,
  type DeliveredCommand,
  deliveredCommand,
} from "../commands/service";
import {
  type AnnouncedSchema,
  acceptHeartbeats,
  announcedSchema,
  authenticateDevice,
  type HeartbeatRateLimit,
  heartbeatInput,
  recordSightings,
  refuseHeartbeat,
  type StaleSchema,
  storeAnnouncedSchemas,
  TELEMETRY_LIMITS,
} from "../devices/service";
import { jsonTextsParam, type Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isUuid, jsonLimitViolation } from "../platform/json-body";
import { KeyedBatcher, type KeyedBatcherOptions } from "../platform/keyed-batcher";
import { insertTelemetryForAccepted } from "../telemetry/service";
import { hostKeyText, noteHostKey, staleHostKeys } from "../terminal/service";
import type { HeartbeatBody } from "./model";

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

/**
 * Checks a heartbeat body (its shape checked by the route's schema) against the size limits (422
 * telemetry_limits_exceeded)
 * and returns the payload to store plus the announced schema, if any.
 * `telemetry.meta.schema_definition` is taken out of the stored payload.
 */
export function parseHeartbeat(body: HeartbeatBody): {
  payloadJson: string;
  schema: AnnouncedSchema | undefined;
  hostKey: string | null;
} {
  const { telemetry, connection_status: status } = body;
  const meta = telemetry.meta;
  let schema: AnnouncedSchema | undefined;
  let storedMeta = meta;
  if (meta && meta.schema_definition !== undefined) {
    schema = announcedSchema(meta.schema_definition, "telemetry.meta.schema_definition");
    const { schema_definition: _, ...rest } = meta;
    storedMeta = rest;
  }
  const payload: Record<string, unknown> = { ...telemetry };
  if (storedMeta !== meta) payload.meta = storedMeta;
  if (status && payload.connection_status === undefined) payload.connection_status = status;
  const violation = jsonLimitViolation(payload, TELEMETRY_LIMITS);
  if (violation) {
    throw new AppError(
      422,
      "telemetry_limits_exceeded",
      `The telemetry exceeds the maximum ${violation.limit.replace("_", " ")}`,
      violation,
    );
  }
  return { payloadJson: JSON.stringify(payload), schema, hostKey: hostKeyText(body.ssh_host_key) ?? null };
}

/** One heartbeat waiting for its batch: its row of the `input` CTE. */
interface BatchItem {
  deviceId: string;
  tokenHash: string;
  schemaHash: string | null;
  schemaJson: string | null;
  eventId: string;
  payloadJson: string;
  /** The reported `ssh_host_key` as `type blob` (hostKeyText), if any. */
  hostKey: string | null;
}

/** What the batch statement did for one heartbeat: nothing (refused), or accepted with its claims. */
type BatchResult =
  | { accepted: false }
  | { accepted: true; remoteAccessRequested: boolean; commands: ClaimedRow[] };

const REFUSED: BatchResult = { accepted: false };

type BatchRow = {
  ord: number;
  remote_access_requested: boolean;
  schema_stale: boolean;
  host_key_stale: boolean;
} & {
  [K in keyof ClaimedRow]: ClaimedRow[K] | null;
};

/**
 * Heartbeats of a whole batch in ONE statement (one round trip, one transaction): each device row is
 * accepted (see acceptHeartbeats), then the accepted heartbeats' telemetry rows are inserted and their
 * devices' queued commands claimed (FOR UPDATE SKIP LOCKED, at most 50 each). The batcher puts at most
 * one heartbeat of a device in a batch, and never one device in two running batches.
 *
 * A batch that claimed no command commits asynchronously (`synchronous_commit = off` for that
 * transaction only): a PostgreSQL crash may lose the last moments of telemetry and last_seen_at —
 * which the next heartbeats restate — but never a command's delivery, whose commit stays durable.
 *
 * An announced schema travels as its hash, a reported SSH host key as its text; the few the statement
 * finds stale (a device whose scripts changed, a key not pinned yet or changed) are stored by follow-up
 * statements. Should one fail, the heartbeats stay stored and answered (`onFollowUpError` hears of
 * it) and the device's next heartbeat reports them again.
 */
export async function runHeartbeatBatch(
  sql: Sql,
  settings: HeartbeatRateLimit,
  items: BatchItem[],
  onFollowUpError: (error: unknown) => void,
) {
  const column = <K extends keyof BatchItem>(key: K) => items.map((item) => item[key]);
  // (Comments stay out of the SQL text, which PostgreSQL copies on every execution.)
  const rows = await sql<BatchRow[]>`
    with input as (
      select * from unnest(${items.map((_, i) => i)}::int[], ${column("deviceId")}::uuid[], ${column("tokenHash")}::text[],
        ${column("schemaHash")}::text[], ${column("eventId")}::uuid[], ${jsonTextsParam(sql, column("payloadJson"))},
        ${column("hostKey")}::text[])
        as i(ord, device_id, token_hash, schema_hash, event_id, payload, host_key)),
    accepted as (${acceptHeartbeats(sql, settings)}),
    sighted as (${recordSightings(sql)}),
    stored as (${insertTelemetryForAccepted(sql)}),
    claimed as (${claimCommandsForAccepted(sql)}),
    host_keys_stale as (${staleHostKeys(sql)})
    select a.ord, a.remote_access_requested, a.schema_stale, a.ord in (select ord from host_keys_stale) as host_key_stale, c.id, c.type, c.args, c.payload, c.payload_ref, c.public_key, c.queued_at,
      case when (select count(*) from claimed) = 0 then set_config('synchronous_commit', 'off', true) end as async_commit
    from accepted a left join claimed c on c.device_id = a.id
    order by a.ord, c.queued_at, c.id`;
  const results: BatchResult[] = items.map(() => REFUSED);
  const staleSchemas: StaleSchema[] = [];
  const staleKeys: BatchItem[] = [];
  for (const row of rows) {
    let result = results[row.ord]!;
    if (!result.accepted) {
      result = { accepted: true, remoteAccessRequested: row.remote_access_requested, commands: [] };
      results[row.ord] = result;
      const item = items[row.ord]!;
      if (row.schema_stale && item.schemaHash && item.schemaJson)
        staleSchemas.push({ deviceId: item.deviceId, hash: item.schemaHash, json: item.schemaJson });
      if (row.host_key_stale) staleKeys.push(item);
    }
    if (row.id) result.commands.push(row as ClaimedRow);
  }
  // Never thrown: the batch is committed, and a batch that throws is run again (keyed-batcher.ts).
  // Both are restated by the device's next heartbeat, which finds them stale again if they failed.
  await storeAnnouncedSchemas(sql, staleSchemas).catch(onFollowUpError);
  for (const item of staleKeys) await noteHostKey(sql, item.deviceId, item.hostKey).catch(onFollowUpError);
  return results;
}

export type HeartbeatBatcher = KeyedBatcher<BatchItem, BatchResult>;

/** The batcher of one web process's heartbeats (see KeyedBatcher for how batches form). */
export function heartbeatBatcher(
  sql: Sql,
  settings: () => Promise<HeartbeatRateLimit>,
  options: KeyedBatcherOptions & { onFollowUpError(error: unknown): void },
): HeartbeatBatcher {
  return new KeyedBatcher(
    async (items) => runHeartbeatBatch(sql, await settings(), items, options.onFollowUpError),
    options,
  );
}

/**
 * One heartbeat: checked here (body, then credentials when the body is bad), written with the other
 * heartbeats of its batch, answered with exactly its own claims. When its batch accepted nothing for
 * it, a second read finds out why (404/401/403/429).
 */
export async function heartbeat(
  sql: Sql,
  batcher: HeartbeatBatcher,
  deviceId: string,
  apiKey: string | undefined,
  body: HeartbeatBody,
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
  const id = deviceId.toLowerCase();
  const result = await batcher.submit(id, {
    deviceId: id,
    ...heartbeatInput(apiKey, parsed.schema),
    eventId: Bun.randomUUIDv7(),
    payloadJson: parsed.payloadJson,
    hostKey: parsed.hostKey,
  });
  if (!result.accepted) return refuseHeartbeat(sql, deviceId, apiKey, options.settings);
  const reply: HeartbeatReply = { commands: result.commands.map(deliveredCommand) };
  if (result.remoteAccessRequested) {
    const access = await options.remoteAccess?.(deviceId);
    if (access) {
      reply.remote_access_token = access.token;
      reply.poll_interval_seconds = access.pollIntervalSeconds;
      reply.tunnel_host_key = access.hostKey;
    }
  }
  return reply;
}
