// The command lifecycle (queue, claim, results, payloads, expiry, retention): one row shape and its
// status rules. What a command may carry: validation.ts.

import {
  RUN_SCRIPT_NAME_MAX,
  RUN_SCRIPT_STREAM_MAX_BYTES,
  RUN_SCRIPT_TIMEOUT_MAX_S,
  RUN_SCRIPT_TIMEOUT_MIN_S,
  type RunScriptOutput,
} from "../../shared/scripts/run-once";
import { wakeDevice } from "../devices/service";
import { randomToken } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { keysetPage, parseKeysetCursor } from "../platform/keyset-cursor";
import { commandsTotal } from "../platform/metrics";
import { COMMAND_STATUSES, type CommandStatus } from "./model";
import { type CommandType, validateCommand } from "./validation";

export {
  type CommandResultInput,
  type EntryOutcome,
  listUnmatchedResults,
  pruneUnmatchedResults,
  recordCommandResults,
  type UnmatchedReason,
  type UnmatchedResult,
} from "./results";
export {
  COMMAND_TYPES,
  type CommandType,
  checkScript,
  installableScript,
  MAX_PAYLOAD_BYTES,
  runnableScript,
  SCRIPT_MAX_BYTES,
  validateCommand,
} from "./validation";
export { COMMAND_STATUSES, type CommandStatus, type RunScriptOutput };

/** At most this many commands are claimed by one heartbeat. */
export const CLAIM_LIMIT = 50;
/** Payloads whose JSON exceeds this are delivered by reference (`payload_ref`). */
export const INLINE_PAYLOAD_LIMIT = 4096;

export interface Command {
  id: string;
  deviceId: string;
  type: CommandType;
  args: unknown[];
  payload: Record<string, unknown> | null;
  payloadRef: string | null;
  publicKey: string | null;
  status: CommandStatus;
  queuedAt: Date;
  expiresAt: Date;
  deliveredAt: Date | null;
  completedAt: Date | null;
  output: unknown;
  error: string | null;
  queuedBy: string | null;
}

const NAMED_TYPES: readonly CommandType[] = ["install_script", "remove_script", "run_script"];

/** The script an install/remove/run command acts on (shown in place of its arguments), else null. */
export function commandScript(command: Pick<Command, "type" | "payload">): string | null {
  const name = command.payload?.name;
  return NAMED_TYPES.includes(command.type) && typeof name === "string" ? name : null;
}

/** A claimed command as the device receives it in the heartbeat reply. */
export interface DeliveredCommand {
  command_id: string;
  type: CommandType;
  args: unknown[];
  payload?: Record<string, unknown>;
  payload_ref?: string;
  public_key?: string;
  queued_at: string;
}

type CommandRowSql = {
  id: string;
  device_id: string;
  type: CommandType;
  args: unknown[];
  payload: Record<string, unknown> | null;
  payload_ref: string | null;
  public_key: string | null;
  status: CommandStatus;
  queued_at: Date;
  expires_at: Date;
  delivered_at: Date | null;
  completed_at: Date | null;
  output: unknown;
  error: string | null;
  queued_by: string | null;
};

function toCommand(row: CommandRowSql): Command {
  return {
    id: row.id,
    deviceId: row.device_id,
    type: row.type,
    args: row.args,
    payload: row.payload,
    payloadRef: row.payload_ref,
    publicKey: row.public_key,
    status: row.status,
    queuedAt: row.queued_at,
    expiresAt: row.expires_at,
    deliveredAt: row.delivered_at,
    completedAt: row.completed_at,
    output: row.output,
    error: row.error,
    queuedBy: row.queued_by,
  };
}

export interface QueueCommandInput {
  deviceId: string;
  type: string;
  args?: unknown;
  payload?: unknown;
  publicKey?: unknown;
  /** Default: the command TTL setting. */
  ttlSeconds: number;
  queuedBy?: string;
}

const COMMAND_COLUMNS = `id, device_id, type, args, payload, payload_ref, public_key, status, queued_at, expires_at,
  delivered_at, completed_at, output, error, queued_by`;

/**
 * Queues a command for a device (404 `device_not_found` when it does not exist). A payload
 * larger than 4 KiB is stored with a `payload_ref` and delivered by reference.
 */
export async function queueCommand(sql: Sql, input: QueueCommandInput): Promise<Command> {
  const command = validateCommand(input);
  if (!isUuid(input.deviceId)) throw new AppError(404, "device_not_found", "Device not found");
  const payloadJson = command.payload === null ? null : JSON.stringify(command.payload);
  const payloadRef =
    payloadJson !== null && Buffer.byteLength(payloadJson) > INLINE_PAYLOAD_LIMIT
      ? `p${randomToken(18)}`
      : null;
  const [row] = await sql<CommandRowSql[]>`
    insert into pending_commands (device_id, type, args, payload, payload_ref, public_key, expires_at, queued_by)
    select d.id, ${command.type}::command_type, ${JSON.stringify(command.args)}::jsonb, ${payloadJson}::jsonb,
      ${payloadRef}, ${command.publicKey}, now() + make_interval(secs => ${input.ttlSeconds}), ${input.queuedBy ?? null}
    from devices d where d.id = ${input.deviceId}::uuid
    returning ${sql.unsafe(COMMAND_COLUMNS)}`;
  if (!row) throw new AppError(404, "device_not_found", "Device not found");
  commandsTotal.inc({ event: "queued" });
  await wakeDevice(sql, input.deviceId); // delivered at the agent's next poll, which this starts
  return toCommand(row);
}

/**
 * The claim of a heartbeat: marks up to 50 queued, unexpired commands of the device in the
 * `accepted` CTE as delivered, oldest first, skipping rows a concurrent claim holds. Embedded
 * in the heartbeat statement (modules/heartbeat/service.ts); see claimCommands for standalone use.
 */
export function claimCommandsForAccepted(sql: Sql) {
  // `id = any(array(...))`: the claimed ids are computed first, then found through the primary key,
  // whatever the planner thinks of the table's size (an `in (...)` may be planned as a hash join
  // over all of pending_commands, which keeps the command history).
  return sql`update pending_commands set status = 'delivered', delivered_at = now()
    where id = any(array(
      select q.id from accepted a cross join lateral (
        select id from pending_commands
        where device_id = a.id and status = 'queued' and expires_at > now()
        order by queued_at, id
        limit ${CLAIM_LIMIT}
        for update skip locked) q))
    returning device_id, id, type, args, case when payload_ref is null then payload end as payload, payload_ref, public_key, queued_at`;
}

export type ClaimedRow = {
  id: string;
  type: CommandType;
  args: unknown[];
  payload: Record<string, unknown> | null;
  payload_ref: string | null;
  public_key: string | null;
  queued_at: Date;
};

/** A claimed row as the device sees it; nulls are left out. */
export function deliveredCommand(row: ClaimedRow): DeliveredCommand {
  const command: DeliveredCommand = {
    command_id: row.id,
    type: row.type,
    args: row.args ?? [],
    queued_at: row.queued_at.toISOString(),
  };
  if (row.payload_ref) command.payload_ref = row.payload_ref;
  else if (row.payload) command.payload = row.payload;
  if (row.public_key) command.public_key = row.public_key;
  return command;
}

/** Claims a device's queued commands in one statement (FOR UPDATE SKIP LOCKED, at most 50). */
export async function claimCommands(sql: Sql, deviceId: string): Promise<DeliveredCommand[]> {
  const rows = await sql<ClaimedRow[]>`
    with accepted as (select ${deviceId}::uuid as id), claimed as (${claimCommandsForAccepted(sql)})
    select * from claimed order by queued_at, id`;
  return rows.map(deliveredCommand);
}

/** The shape a payload ref may have (queueCommand makes `p` + a random token): not a script name. */
const PAYLOAD_REF = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/**
 * The deferred payload a delivered command refers to (newest command of this device with that
 * ref), or undefined. Queued and expired commands do not give theirs out.
 */
export async function commandPayload(
  sql: Sql,
  deviceId: string,
  ref: string,
): Promise<Record<string, unknown> | undefined> {
  if (!PAYLOAD_REF.test(ref)) return undefined;
  const [row] = await sql<{ payload: Record<string, unknown> | null }[]>`
    select payload from pending_commands
    where device_id = ${deviceId}::uuid and payload_ref = ${ref} and status in ('delivered', 'succeeded', 'failed')
    order by queued_at desc limit 1`;
  return row?.payload ?? undefined;
}

/** Marks queued commands whose TTL passed as expired; returns how many. */
export async function expireCommands(sql: Sql): Promise<number> {
  const result = await sql`update pending_commands set status = 'expired', completed_at = now()
    where status = 'queued' and expires_at <= now()`;
  commandsTotal.inc({ event: "expired" }, result.count);
  return result.count;
}

const RETENTION_BATCH = 5_000;

/**
 * Deletes command history older than `days`: finished commands (succeeded, failed, expired) by
 * completion time, and delivered ones a device never answered by delivery time. Queued commands
 * are never touched. Deletes in batches so a large backlog never holds long locks.
 */
export async function pruneCommandHistory(sql: Sql, days: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const batch = await sql`
      delete from pending_commands where id in (
        select id from pending_commands
        where (status in ('succeeded', 'failed', 'expired') and completed_at < now() - make_interval(days => ${days}))
           or (status = 'delivered' and delivered_at < now() - make_interval(days => ${days}))
        limit ${RETENTION_BATCH})`;
    deleted += batch.count;
    if (batch.count < RETENTION_BATCH) return deleted;
  }
}

export async function getCommand(sql: Sql, id: string): Promise<Command | undefined> {
  if (!isUuid(id)) return undefined;
  const [row] = await sql<
    CommandRowSql[]
  >`select ${sql.unsafe(COMMAND_COLUMNS)} from pending_commands where id = ${id}::uuid`;
  return row && toCommand(row);
}

export interface CommandListOptions {
  deviceId?: string;
  status?: CommandStatus;
  limit?: number;
  cursor?: string;
}

/** Commands newest first (keyset pagination), optionally of one device and/or one status. */
export async function listCommands(
  sql: Sql,
  options: CommandListOptions = {},
): Promise<{ commands: Command[]; nextCursor: string | undefined }> {
  const limit = Math.max(1, Math.min(options.limit ?? 50, 500));
  if (options.deviceId !== undefined && !isUuid(options.deviceId))
    return { commands: [], nextCursor: undefined };
  if (options.status !== undefined && !(COMMAND_STATUSES as readonly string[]).includes(options.status)) {
    throw badRequest(`status must be one of ${COMMAND_STATUSES.join(", ")}`, { field: "status" });
  }
  const after = options.cursor ? parseKeysetCursor(options.cursor, { time: true }) : undefined;
  const rows = await sql<CommandRowSql[]>`
    select ${sql.unsafe(COMMAND_COLUMNS)} from pending_commands
    where true
      ${options.deviceId ? sql`and device_id = ${options.deviceId}::uuid` : sql``}
      ${options.status ? sql`and status = ${options.status}::command_status` : sql``}
      ${after ? sql`and (queued_at, id) < (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
    order by queued_at desc, id desc limit ${limit + 1}`;
  const { page, nextCursor } = keysetPage(rows, limit, (last) => [last.queued_at.toISOString(), last.id]);
  return { commands: page.map(toCommand), nextCursor };
}

/**
 * Withdraws a command that is still queued (deletes it). `not_found` for an unknown id,
 * `not_queued` once it was delivered or finished.
 */
export async function cancelCommand(sql: Sql, id: string): Promise<"cancelled" | "not_found" | "not_queued"> {
  if (!isUuid(id)) return "not_found";
  const deleted = await sql`delete from pending_commands where id = ${id}::uuid and status = 'queued'`;
  if (deleted.count > 0) return "cancelled";
  const [exists] = await sql`select 1 from pending_commands where id = ${id}::uuid`;
  return exists ? "not_queued" : "not_found";
}

/** Counts of a device's commands by status (device detail). */
export async function commandCounts(sql: Sql, deviceId: string): Promise<Record<CommandStatus, number>> {
  const counts = Object.fromEntries(COMMAND_STATUSES.map((s) => [s, 0])) as Record<CommandStatus, number>;
  if (!isUuid(deviceId)) return counts;
  const rows = await sql<{ status: CommandStatus; n: number }[]>`
    select status, count(*)::int as n from pending_commands where device_id = ${deviceId}::uuid group by status`;
  for (const row of rows) counts[row.status] = row.n;
  return counts;
}

// ---------------------------------------------------------------- run_script, for other features (rollouts)

/** run_script's bounds, for forms (shared/scripts/run-once.ts holds them for the agent and the server). */
export const RUN_SCRIPT_LIMITS = {
  nameMax: RUN_SCRIPT_NAME_MAX,
  timeoutMinSeconds: RUN_SCRIPT_TIMEOUT_MIN_S,
  timeoutMaxSeconds: RUN_SCRIPT_TIMEOUT_MAX_S,
  streamMaxBytes: RUN_SCRIPT_STREAM_MAX_BYTES,
} as const;

/** What queueing a run_script needs; the script is checked as validateCommand checks it. */
export interface RunScriptInput {
  deviceId: string;
  script: string;
  name?: string;
  timeoutSeconds?: number;
  ttlSeconds: number;
  queuedBy?: string;
}

/** Queues a script to run once on a device (400 for a script the agent would refuse; nothing queued). */
export function queueRunScript(sql: Sql, input: RunScriptInput): Promise<Command> {
  return queueCommand(sql, {
    deviceId: input.deviceId,
    type: "run_script",
    payload: { data: input.script, name: input.name, timeout_seconds: input.timeoutSeconds },
    ttlSeconds: input.ttlSeconds,
    queuedBy: input.queuedBy,
  });
}

/** The output of a run as the device posted it, or null when it is not one. */
export function runScriptOutput(output: unknown): RunScriptOutput | null {
  const o = output as Partial<RunScriptOutput> | null;
  if (!o || typeof o !== "object" || typeof o.exit_code !== "number") return null;
  return {
    exit_code: o.exit_code,
    stdout: typeof o.stdout === "string" ? o.stdout : "",
    stderr: typeof o.stderr === "string" ? o.stderr : "",
    stdout_truncated: o.stdout_truncated === true,
    stderr_truncated: o.stderr_truncated === true,
    duration_ms: typeof o.duration_ms === "number" ? o.duration_ms : 0,
  };
}

/** Where a command stands, for a feature following commands it queued (rollouts). */
export interface CommandOutcome {
  id: string;
  status: CommandStatus;
  output: unknown;
  error: string | null;
}

/** The status of these commands (ids of commands deleted or never queued are absent). */
export async function commandOutcomes(sql: Sql, ids: string[]): Promise<Map<string, CommandOutcome>> {
  const wanted = ids.filter(isUuid);
  if (wanted.length === 0) return new Map();
  const rows = await sql<CommandOutcome[]>`
    select id::text as id, status, output, error from pending_commands where id = any(${wanted}::uuid[])`;
  return new Map(rows.map((row) => [row.id, row]));
}

/** Withdraws (deletes) those of these commands still queued; returns the ids withdrawn. */
export async function withdrawQueuedCommands(sql: Sql, ids: string[]): Promise<string[]> {
  const wanted = ids.filter(isUuid);
  if (wanted.length === 0) return [];
  const rows = await sql<{ id: string }[]>`
    delete from pending_commands where id = any(${wanted}::uuid[]) and status = 'queued' returning id::text as id`;
  return rows.map((row) => row.id);
}
