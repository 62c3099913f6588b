import {
  type ClaimedRow,
  claimCommandsForAccepted,
  type DeliveredCommand,
  deliveredCommand,
} from "../commands/service";
import { constantTimeEqual, randomToken, sha256Hex } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { pgDate } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { isPlainObject, isUuid, jsonLimitViolation } from "../platform/json-body";
import { encodeKeysetCursor, parseKeysetCursor } from "../platform/keyset-cursor";
import type { DeviceSettings } from "../settings/service";
import { deleteDeviceTelemetry, insertTelemetryForAccepted } from "../telemetry/service";
import {
  ipv4From,
  normaliseMac,
  schemaHash,
  TELEMETRY_LIMITS,
  validateMetadata,
  validateSchemaDefinition,
} from "./validation";

export const APPROVAL_STATUSES = ["pending", "approved", "rejected"] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

export interface Device {
  id: string;
  macAddress: string;
  productName: string | null;
  approvalStatus: ApprovalStatus;
  ipv4Address: string | null;
  metadata: Record<string, unknown>;
  /** The telemetry schema last announced ({} when none). */
  schema: Record<string, unknown>;
  /** `schema.version`, "v1" when the schema has none; null without a schema. */
  schemaVersion: string | null;
  lastSeenAt: Date | null;
  /** Seen within the online window (computed at read time, never stored). */
  online: boolean;
  remoteAccessRequested: boolean;
  hasApiToken: boolean;
  approvalChangedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

type DeviceRowSql = {
  id: string;
  mac_address: string;
  product_name: string | null;
  approval_status: ApprovalStatus;
  ipv4_address: string | null;
  metadata: Record<string, unknown>;
  schema: Record<string, unknown>;
  schema_version: string | null;
  last_seen_at: Date | null;
  online: boolean;
  remote_access_requested: boolean;
  has_api_token: boolean;
  approval_changed_at: Date | null;
  created_at: Date;
  updated_at: Date;
};

function toDevice(row: DeviceRowSql): Device {
  return {
    id: row.id,
    macAddress: row.mac_address,
    productName: row.product_name,
    approvalStatus: row.approval_status,
    ipv4Address: row.ipv4_address,
    metadata: row.metadata,
    schema: row.schema,
    schemaVersion: row.schema_version,
    lastSeenAt: pgDate(row.last_seen_at),
    online: row.online,
    remoteAccessRequested: row.remote_access_requested,
    hasApiToken: row.has_api_token,
    approvalChangedAt: pgDate(row.approval_changed_at),
    createdAt: pgDate(row.created_at),
    updatedAt: pgDate(row.updated_at),
  };
}

/** Columns of a Device, for a `devices d` row; `online` needs the window in seconds. */
function deviceColumns(sql: Sql, onlineWindowSeconds: number) {
  return sql`d.id, d.mac_address, d.product_name, d.approval_status, d.ipv4_address, d.metadata, d.schema,
    case when d.schema = '{}'::jsonb then null else coalesce(nullif(d.schema->>'version', ''), 'v1') end as schema_version,
    d.last_seen_at,
    coalesce(d.last_seen_at >= now() - make_interval(secs => ${onlineWindowSeconds}), false) as online,
    d.remote_access_requested, d.api_token_hash is not null as has_api_token, d.approval_changed_at,
    d.created_at, d.updated_at`;
}

// ---------------------------------------------------------------- registration

export interface RegistrationInput {
  mac_address?: unknown;
  product_name?: unknown;
  metadata?: unknown;
  schema_definition?: unknown;
}

/** Checks a registration body; 400 invalid_request for shape errors, 422 for an invalid schema. */
export function parseRegistration(body: unknown) {
  if (!isPlainObject(body)) throw badRequest("The request body must be a JSON object");
  if (body.mac_address === undefined || body.mac_address === null) {
    throw badRequest("mac_address is required", { field: "mac_address" });
  }
  const macAddress = normaliseMac(body.mac_address);
  let productName: string | null = null;
  if (body.product_name !== undefined && body.product_name !== null) {
    if (typeof body.product_name !== "string" || body.product_name.length > 200) {
      throw badRequest("product_name must be a string of at most 200 characters", { field: "product_name" });
    }
    productName = body.product_name.trim() || null;
  }
  const metadata =
    body.metadata === undefined || body.metadata === null ? undefined : validateMetadata(body.metadata);
  const schema =
    body.schema_definition === undefined || body.schema_definition === null
      ? undefined
      : validateSchemaDefinition(body.schema_definition);
  return { macAddress, productName, metadata, schema };
}

/**
 * Registers a device or, for a known MAC, updates it (same id; approval status kept; product name,
 * metadata and schema replaced when given). An approved device gets a fresh API token in the same
 * statement that stores its hash: the token returned is always the one that is valid, whatever
 * approval or registration runs concurrently (the row lock of the upsert orders them).
 */
export async function registerDevice(
  sql: Sql,
  body: unknown,
  options: { onlineWindowSeconds: number },
): Promise<{ device: Device; apiToken: string | undefined; created: boolean }> {
  const input = parseRegistration(body);
  const token = randomToken(32);
  const tokenHash = sha256Hex(token);
  const schemaJson = input.schema ? JSON.stringify(input.schema) : null;
  const hash = input.schema ? schemaHash(input.schema) : null;
  const [row] = await sql<(DeviceRowSql & { created: boolean; token_issued: boolean })[]>`
    with upserted as (
      insert into devices as d (mac_address, product_name, metadata, schema, schema_hash, ipv4_address)
      values (${input.macAddress}, ${input.productName}, ${JSON.stringify(input.metadata ?? {})}::jsonb,
        coalesce(${schemaJson}::jsonb, '{}'::jsonb), ${hash}, ${ipv4From(input.metadata)})
      on conflict (mac_address) do update set
        product_name = coalesce(excluded.product_name, d.product_name),
        metadata = case when ${input.metadata !== undefined} then excluded.metadata else d.metadata end,
        ipv4_address = case when ${input.metadata !== undefined} then excluded.ipv4_address else d.ipv4_address end,
        schema = case when ${schemaJson !== null} then excluded.schema else d.schema end,
        schema_hash = case when ${schemaJson !== null} then excluded.schema_hash else d.schema_hash end,
        api_token_hash = case when d.approval_status = 'approved' then ${tokenHash} else d.api_token_hash end,
        token_issued_at = case when d.approval_status = 'approved' then now() else d.token_issued_at end,
        updated_at = now()
      returning d.*, (xmax = 0) as created
    )
    select ${deviceColumns(sql, options.onlineWindowSeconds)}, d.created,
      (d.approval_status = 'approved' and d.api_token_hash = ${tokenHash}) as token_issued
    from upserted d`;
  return { device: toDevice(row!), apiToken: row!.token_issued ? token : undefined, created: row!.created };
}

// ---------------------------------------------------------------- device authentication

type AuthRow = {
  approval_status: ApprovalStatus;
  api_token_hash: string | null;
  heartbeat_window_started_at: Date | null;
  heartbeat_window_count: number;
};

async function authRow(sql: Sql, deviceId: string): Promise<AuthRow> {
  if (!isUuid(deviceId)) throw deviceNotFound();
  const [row] = await sql<AuthRow[]>`
    select approval_status, api_token_hash, heartbeat_window_started_at, heartbeat_window_count
    from devices where id = ${deviceId}::uuid`;
  if (!row) throw deviceNotFound();
  return row;
}

const deviceNotFound = () => new AppError(404, "device_not_found", "Device not found");
const missingApiKey = () => new AppError(401, "missing_api_key", "API key is required");

/** The checks in their fixed order: 404 device_not_found, 401 missing_api_key, 403 device_not_approved, 401 invalid_api_key. */
function checkCredentials(row: AuthRow, apiKey: string | undefined): void {
  if (!apiKey) throw missingApiKey();
  if (row.approval_status !== "approved")
    throw new AppError(403, "device_not_approved", "Device is not approved");
  if (!row.api_token_hash) throw missingApiKey();
  if (!constantTimeEqual(sha256Hex(apiKey), row.api_token_hash)) {
    throw new AppError(401, "invalid_api_key", "API key is invalid");
  }
}

/** Authenticates a device runtime call (`?api_key=`); throws the typed error otherwise. */
export async function authenticateDevice(
  sql: Sql,
  deviceId: string,
  apiKey: string | undefined,
): Promise<void> {
  checkCredentials(await authRow(sql, deviceId), apiKey);
}

// ---------------------------------------------------------------- heartbeat

export const HEARTBEAT_MAX_BYTES = 256 * 1024;

export interface HeartbeatReply {
  commands: DeliveredCommand[];
  /** Set by the remote-access module when the device should open its tunnel. */
  remote_access_token?: string;
  /** While remote access is requested: poll this often, so the tunnel starts in seconds. */
  poll_interval_seconds?: number;
  /** Fingerprint of the tunnel server's host key, which the agent pins. */
  tunnel_host_key?: string;
}

export interface HeartbeatOptions {
  settings: Pick<DeviceSettings, "heartbeatRateLimit" | "heartbeatRateWindowSeconds">;
  /** Remote access supplies the token (and fast-poll hint) for devices that requested it. */
  remoteAccess?(
    deviceId: string,
  ): Promise<{ token: string; pollIntervalSeconds: number; hostKey: string } | undefined>;
}

/**
 * Validates a heartbeat body and returns the payload to store plus the announced schema, if any.
 * `telemetry` must be an object whose `device`, `scripts`, `meta` are objects when present;
 * `connection_status` an object when present. Limits: depth, keys, arrays, strings (422
 * telemetry_limits_exceeded). `telemetry.meta.schema_definition` is taken out of the stored payload.
 */
export function parseHeartbeat(body: unknown): {
  payloadJson: string;
  schema: Record<string, unknown> | undefined;
} {
  if (!isPlainObject(body)) throw badRequest("The heartbeat body must be a JSON object");
  const telemetry = body.telemetry;
  if (!isPlainObject(telemetry)) throw badRequest("telemetry must be a JSON object", { field: "telemetry" });
  for (const key of ["device", "scripts", "meta"] as const) {
    if (telemetry[key] !== undefined && !isPlainObject(telemetry[key])) {
      throw badRequest(`telemetry.${key} must be a JSON object`, { field: `telemetry.${key}` });
    }
  }
  const status = body.connection_status;
  if (status !== undefined && status !== null && !isPlainObject(status)) {
    throw badRequest("connection_status must be a JSON object", { field: "connection_status" });
  }
  const meta = telemetry.meta as Record<string, unknown> | undefined;
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
 * updated (last_seen_at, the rate-limit window, the schema when it changed) only if the token hash
 * matches, the device is approved and the rate limit allows; then the telemetry row is inserted
 * and queued commands are claimed (FOR UPDATE SKIP LOCKED, at most 50). Concurrent heartbeats of
 * one device serialise on the device row, and a claimed command is never claimed again.
 * When the statement accepts nothing, a second read finds out why (404/401/403/429).
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
  if (!isUuid(deviceId)) throw deviceNotFound();
  let parsed: ReturnType<typeof parseHeartbeat>;
  try {
    parsed = parseHeartbeat(body);
  } catch (error) {
    // Authentication errors come first, whatever the body.
    await authenticateDevice(sql, deviceId, apiKey);
    throw error;
  }
  if (!apiKey) return rejectHeartbeat(sql, deviceId, apiKey, options);
  const { heartbeatRateLimit: limit, heartbeatRateWindowSeconds: window } = options.settings;
  const schemaJson = parsed.schema ? JSON.stringify(parsed.schema) : null;
  const hash = parsed.schema ? schemaHash(parsed.schema) : null;
  // Nothing claimed: `async_commit` turns off the WAL flush wait for this transaction (see above).
  // (Comments stay out of the SQL text, which PostgreSQL copies on every execution.)
  const rows = await sql<HeartbeatRow[]>`
    with accepted as (
      update devices set
        last_seen_at = now(),
        heartbeat_window_started_at = case when heartbeat_window_started_at > now() - make_interval(secs => ${window})
          then heartbeat_window_started_at else now() end,
        heartbeat_window_count = case when heartbeat_window_started_at > now() - make_interval(secs => ${window})
          then heartbeat_window_count + 1 else 1 end,
        schema = case when ${hash}::text is not null and schema_hash is distinct from ${hash}::text
          then ${schemaJson}::jsonb else schema end,
        schema_hash = coalesce(${hash}::text, schema_hash)
      where id = ${deviceId}::uuid and api_token_hash = ${sha256Hex(apiKey)} and approval_status = 'approved'
        and (heartbeat_window_started_at is null
          or heartbeat_window_started_at <= now() - make_interval(secs => ${window})
          or heartbeat_window_count < ${limit})
      returning id, remote_access_requested
    ),
    stored as (${insertTelemetryForAccepted(sql, { id: Bun.randomUUIDv7(), payloadJson: parsed.payloadJson })}),
    claimed as (${claimCommandsForAccepted(sql)})
    select a.remote_access_requested, c.*,
      case when c.id is null then set_config('synchronous_commit', 'off', true) end as async_commit
    from accepted a left join claimed c on true
    order by c.queued_at, c.id`;
  if (rows.length === 0) return rejectHeartbeat(sql, deviceId, apiKey, options);
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

/** Why a heartbeat was not accepted: always throws. */
async function rejectHeartbeat(
  sql: Sql,
  deviceId: string,
  apiKey: string | undefined,
  options: HeartbeatOptions,
): Promise<never> {
  const row = await authRow(sql, deviceId);
  checkCredentials(row, apiKey);
  const { heartbeatRateWindowSeconds: window } = options.settings;
  const started = row.heartbeat_window_started_at
    ? pgDate(row.heartbeat_window_started_at).getTime()
    : Date.now();
  throw rateLimited("Heartbeat", options.settings.heartbeatRateLimit, window, started);
}

// ---------------------------------------------------------------- rate limits

/** Window of every device API limit (heartbeats, registrations, command results and payloads). */
export const DEVICE_API_RATE_WINDOW_SECONDS = 60;

/**
 * The one 429 of the device API: `rate_limited`, `details: {limit, window_seconds}` and
 * `Retry-After` = seconds until the fixed window that started at `windowStartedMs` ends.
 */
export function rateLimited(what: string, limit: number, windowSeconds: number, windowStartedMs: number) {
  const retryAfter = Math.max(1, Math.ceil((windowStartedMs + windowSeconds * 1000 - Date.now()) / 1000));
  return new AppError(
    429,
    "rate_limited",
    `${what} rate limit exceeded`,
    { limit, window_seconds: windowSeconds },
    { "Retry-After": String(Math.min(retryAfter, windowSeconds)) },
  );
}

/**
 * Counts one request against a fixed-window limit kept in PostgreSQL under `key` — the heartbeat's
 * scheme (same window arithmetic, refused requests not counted, exact across web processes: the
 * upsert locks the counter row), for limits that have no device row to live on. Throws
 * `rateLimited()` when the window's `limit` is used up.
 */
export async function consumeRateLimit(
  sql: Sql,
  input: { key: string; limit: number; what: string; windowSeconds?: number },
): Promise<void> {
  const window = input.windowSeconds ?? DEVICE_API_RATE_WINDOW_SECONDS;
  const counted = await sql`
    insert into device_api_rate_limits as r (key, window_started_at, count) values (${input.key}, now(), 1)
    on conflict (key) do update set
      window_started_at = case when r.window_started_at > now() - make_interval(secs => ${window})
        then r.window_started_at else now() end,
      count = case when r.window_started_at > now() - make_interval(secs => ${window})
        then r.count + 1 else 1 end
    where r.window_started_at <= now() - make_interval(secs => ${window}) or r.count < ${input.limit}
    returning 1`;
  if (counted.length > 0) return;
  const [row] = await sql<{ window_started_at: string | Date }[]>`
    select window_started_at from device_api_rate_limits where key = ${input.key}`;
  const started = row ? pgDate(row.window_started_at).getTime() : Date.now();
  throw rateLimited(input.what, input.limit, window, started);
}

// ---------------------------------------------------------------- reads

export async function getDevice(
  sql: Sql,
  id: string,
  options: { onlineWindowSeconds: number },
): Promise<Device | undefined> {
  if (!isUuid(id)) return undefined;
  const [row] = await sql<DeviceRowSql[]>`
    select ${deviceColumns(sql, options.onlineWindowSeconds)} from devices d where d.id = ${id}::uuid`;
  return row && toDevice(row);
}

export const DEVICE_SORTS = [
  "created_at",
  "last_seen_at",
  "mac_address",
  "product_name",
  "approval_status",
] as const;
export type DeviceSort = (typeof DEVICE_SORTS)[number];

const SORT_EXPRESSIONS: Record<DeviceSort, { expr: string; cast: string }> = {
  created_at: { expr: "d.created_at", cast: "timestamptz" },
  last_seen_at: { expr: "coalesce(d.last_seen_at, '-infinity'::timestamptz)", cast: "timestamptz" },
  mac_address: { expr: "d.mac_address", cast: "text" },
  product_name: { expr: "coalesce(d.product_name, '')", cast: "text" },
  approval_status: { expr: "d.approval_status::text", cast: "text" },
};

export interface DeviceFilters {
  approvalStatus?: ApprovalStatus;
  connectivityStatus?: "online" | "offline";
  /** `remote_access_requested=true|false`: devices with (or without) an active remote-access lease. */
  remoteAccessRequested?: boolean;
  /** Exact product name. */
  product?: string;
  /** Substring of MAC address, product name, IPv4 address or id. */
  search?: string;
}

export interface DeviceListOptions extends DeviceFilters {
  onlineWindowSeconds: number;
  sort?: DeviceSort;
  order?: "asc" | "desc";
  limit?: number;
  cursor?: string;
}

export interface DeviceList {
  devices: Device[];
  nextCursor: string | undefined;
  activeFilters: Record<string, string>;
}

/** Filters from loose query values: trimmed; unknown enum values and blanks are ignored. */
export function normaliseDeviceFilters(query: Record<string, unknown>): DeviceFilters {
  const text = (value: unknown) =>
    typeof value === "string" && value.trim() !== "" ? value.trim().slice(0, 200) : undefined;
  const approval = text(query.approval_status);
  const connectivity = text(query.connectivity_status);
  return {
    approvalStatus: (APPROVAL_STATUSES as readonly string[]).includes(approval ?? "")
      ? (approval as ApprovalStatus)
      : undefined,
    connectivityStatus: connectivity === "online" || connectivity === "offline" ? connectivity : undefined,
    remoteAccessRequested: { true: true, false: false }[text(query.remote_access_requested) ?? ""],
    product: text(query.product),
    search: text(query.search),
  };
}

export function activeFilters(filters: DeviceFilters): Record<string, string> {
  const active: Record<string, string> = {};
  if (filters.approvalStatus) active.approval_status = filters.approvalStatus;
  if (filters.connectivityStatus) active.connectivity_status = filters.connectivityStatus;
  if (filters.remoteAccessRequested !== undefined)
    active.remote_access_requested = String(filters.remoteAccessRequested);
  if (filters.product) active.product = filters.product;
  if (filters.search) active.search = filters.search;
  return active;
}

function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Devices with filters, a sort and keyset pagination (stable under inserts). */
export async function listDevices(sql: Sql, options: DeviceListOptions): Promise<DeviceList> {
  const sort = SORT_EXPRESSIONS[options.sort ?? "created_at"];
  if (!sort) throw badRequest(`sort must be one of ${DEVICE_SORTS.join(", ")}`, { field: "sort" });
  const order =
    options.order ?? (options.sort === undefined || options.sort === "created_at" ? "desc" : "asc");
  const limit = Math.max(1, Math.min(options.limit ?? 50, 500));
  const after = options.cursor ? parseKeysetCursor(options.cursor) : undefined;
  const window = options.onlineWindowSeconds;
  const op = order === "desc" ? "<" : ">";
  const rows = await sql<(DeviceRowSql & { sort_key: string })[]>`
    select ${deviceColumns(sql, window)}, (${sql.unsafe(sort.expr)})::text as sort_key
    from devices d
    where true
      ${options.approvalStatus ? sql`and d.approval_status = ${options.approvalStatus}::device_approval_status` : sql``}
      ${options.connectivityStatus === "online" ? sql`and d.last_seen_at >= now() - make_interval(secs => ${window})` : sql``}
      ${options.connectivityStatus === "offline" ? sql`and (d.last_seen_at is null or d.last_seen_at < now() - make_interval(secs => ${window}))` : sql``}
      ${options.product ? sql`and d.product_name = ${options.product}` : sql``}
      ${options.remoteAccessRequested !== undefined ? sql`and d.remote_access_requested = ${options.remoteAccessRequested}` : sql``}
      ${
        options.search
          ? sql`and (d.mac_address ilike ${likePattern(options.search)} or d.product_name ilike ${likePattern(options.search)}
              or d.ipv4_address ilike ${likePattern(options.search)} or d.id::text = ${options.search.toLowerCase()}
              or replace(d.mac_address, ':', '') ilike ${likePattern(options.search.replace(/[:.-]/g, ""))})`
          : sql``
      }
      ${after ? sql`and (${sql.unsafe(sort.expr)}, d.id) ${sql.unsafe(op)} (${after[0]}::${sql.unsafe(sort.cast)}, ${after[1]}::uuid)` : sql``}
    order by ${sql.unsafe(sort.expr)} ${sql.unsafe(order)}, d.id ${sql.unsafe(order)}
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const nextCursor = rows.length > limit && last ? encodeKeysetCursor([last.sort_key, last.id]) : undefined;
  return { devices: page.map(toDevice), nextCursor, activeFilters: activeFilters(options) };
}

export interface FleetCounts {
  total: number;
  pending: number;
  approved: number;
  rejected: number;
  online: number;
  offline: number;
}

/** Totals for the dashboard; online/offline count approved devices only. */
export async function fleetCounts(sql: Sql, onlineWindowSeconds: number): Promise<FleetCounts> {
  const [row] = await sql<FleetCounts[]>`
    select count(*)::int as total,
      count(*) filter (where approval_status = 'pending')::int as pending,
      count(*) filter (where approval_status = 'approved')::int as approved,
      count(*) filter (where approval_status = 'rejected')::int as rejected,
      count(*) filter (where approval_status = 'approved'
        and last_seen_at >= now() - make_interval(secs => ${onlineWindowSeconds}))::int as online,
      count(*) filter (where approval_status = 'approved'
        and (last_seen_at is null or last_seen_at < now() - make_interval(secs => ${onlineWindowSeconds})))::int as offline
    from devices`;
  return row!;
}

// ---------------------------------------------------------------- approval and edits

/**
 * Approves or rejects devices that are still pending, all in one statement (one transaction);
 * devices already approved or rejected are left as they are. Returns the ids that changed.
 */
export async function setApprovalStatus(
  sql: Sql,
  ids: string[],
  status: "approved" | "rejected",
): Promise<string[]> {
  if (ids.length === 0) throw badRequest("Select at least one device", { field: "ids" });
  if (ids.length > 1000) throw badRequest("At most 1000 devices at once", { field: "ids" });
  const valid = [...new Set(ids.filter(isUuid).map((id) => id.toLowerCase()))];
  if (valid.length === 0) return [];
  const rows = await sql<{ id: string }[]>`
    update devices set approval_status = ${status}::device_approval_status, approval_changed_at = now(), updated_at = now()
    where id in (
      -- Rows are locked in id order, so concurrent bulk changes cannot deadlock.
      select id from devices where id = any(${valid}::uuid[]) and approval_status = 'pending' order by id for update)
      and approval_status = 'pending'
    returning id`;
  return rows.map((r) => r.id);
}

export const approveDevices = (sql: Sql, ids: string[]) => setApprovalStatus(sql, ids, "approved");
export const rejectDevices = (sql: Sql, ids: string[]) => setApprovalStatus(sql, ids, "rejected");

export interface DeviceUpdate {
  approvalStatus?: ApprovalStatus;
  productName?: string | null;
  metadata?: Record<string, unknown>;
}

/**
 * Edits a device. approval_status may only move pending → approved | rejected (or stay): other
 * transitions are 409 invalid_transition. Undefined when the device does not exist.
 */
export async function updateDevice(
  sql: Sql,
  id: string,
  update: DeviceUpdate,
  options: { onlineWindowSeconds: number },
): Promise<Device | undefined> {
  if (!isUuid(id)) return undefined;
  if (
    update.approvalStatus !== undefined &&
    !(APPROVAL_STATUSES as readonly string[]).includes(update.approvalStatus)
  ) {
    throw badRequest(`approval_status must be one of ${APPROVAL_STATUSES.join(", ")}`, {
      field: "approval_status",
    });
  }
  if (
    update.productName !== undefined &&
    update.productName !== null &&
    (typeof update.productName !== "string" || update.productName.length > 200)
  ) {
    throw badRequest("product_name must be a string of at most 200 characters", { field: "product_name" });
  }
  const metadata = update.metadata === undefined ? undefined : validateMetadata(update.metadata);
  return sql.begin(async (tx) => {
    const [current] = await tx<{ approval_status: ApprovalStatus }[]>`
      select approval_status from devices where id = ${id}::uuid for update`;
    if (!current) return undefined;
    const next = update.approvalStatus;
    if (next !== undefined && next !== current.approval_status && current.approval_status !== "pending") {
      throw new AppError(
        409,
        "invalid_transition",
        `Cannot change approval from ${current.approval_status} to ${next}`,
      );
    }
    if (next !== undefined && next !== current.approval_status && next === "pending") {
      throw new AppError(409, "invalid_transition", "Cannot change approval back to pending");
    }
    const changesApproval = next !== undefined && next !== current.approval_status;
    await tx`
      update devices set
        approval_status = ${next ?? current.approval_status}::device_approval_status,
        approval_changed_at = case when ${changesApproval} then now() else approval_changed_at end,
        product_name = case when ${update.productName !== undefined} then ${update.productName?.trim() || null} else product_name end,
        metadata = case when ${metadata !== undefined} then ${JSON.stringify(metadata ?? {})}::jsonb else metadata end,
        ipv4_address = case when ${metadata !== undefined} then ${ipv4From(metadata)} else ipv4_address end,
        updated_at = now()
      where id = ${id}::uuid`;
    const [row] = await tx<DeviceRowSql[]>`
      select ${deviceColumns(tx as unknown as Sql, options.onlineWindowSeconds)} from devices d where d.id = ${id}::uuid`;
    return toDevice(row!);
  });
}

/** Deletes a device, its commands (cascade) and its telemetry. */
export async function deleteDevice(sql: Sql, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  return sql.begin(async (tx) => {
    const deleted = await tx`delete from devices where id = ${id}::uuid`;
    if (deleted.count === 0) return false;
    await deleteDeviceTelemetry(tx as unknown as Sql, id);
    return true;
  });
}

/** Sets the remote-access flag (the remote-access module drives it). */
export async function setRemoteAccessRequested(sql: Sql, id: string, requested: boolean): Promise<boolean> {
  if (!isUuid(id)) return false;
  const result = await sql`update devices set remote_access_requested = ${requested}, updated_at = now()
    where id = ${id}::uuid and remote_access_requested is distinct from ${requested}`;
  return result.count > 0;
}

// ---------------------------------------------------------------- telemetry schemas (builder)

export interface SchemaReference {
  product: string;
  version: string;
  /** How many different schemas devices announced for this product/version. */
  variants: number;
  devices: number;
}

/** Every (product, version) some device announced a schema for, sorted. */
export async function listTelemetrySchemas(sql: Sql): Promise<SchemaReference[]> {
  return sql<SchemaReference[]>`
    select schema->>'product' as product, coalesce(nullif(schema->>'version', ''), 'v1') as version,
      count(distinct schema_hash)::int as variants, count(*)::int as devices
    from devices
    where schema <> '{}'::jsonb and coalesce(schema->>'product', '') <> ''
    group by 1, 2 order by 1, 2`;
}

/** The distinct schemas announced for a product/version (empty: none; several: a conflict). */
export async function findTelemetrySchemas(
  sql: Sql,
  product: string,
  version: string,
): Promise<Record<string, unknown>[]> {
  const rows = await sql<{ schema: Record<string, unknown> }[]>`
    select distinct on (schema_hash) schema from devices
    where schema <> '{}'::jsonb and schema->>'product' = ${product}
      and coalesce(nullif(schema->>'version', ''), 'v1') = ${version}
    order by schema_hash limit 10`;
  return rows.map((r) => r.schema);
}
