import { getCommand, queueCommand } from "../commands/service";
import { getDevice } from "../devices/service";
import { announceDevice } from "../live/service";
import type { Sql } from "../platform/database";
import { AppError, notFound } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import {
  deviceOffline,
  endLease,
  leaseIsActive,
  openLease,
  signCredential,
  verifyCredential,
} from "../remote-access/service";
import { terminalInputRecording } from "../settings/service";
import { checkHostKey, type HostKeyCheck } from "./host-keys";
import { decryptPrivateKey, encryptPrivateKey, ephemeralKey, newSessionRef, refHash } from "./keys";
import { type EndReason, JoinError, type TerminalLimits } from "./model";

/** A session ref may be joined this long after the key was authorized (reference: 60 minutes). */
export const SESSION_MAX_SECONDS = 3600;
/** The socket token's lifetime (reference: Phoenix.Token max_age 3600). */
export const SOCKET_TOKEN_SECONDS = 3600;
/** How long a queued `ssh_authorize` may wait for the device's next poll before it expires. */
const AUTHORIZE_COMMAND_TTL_SECONDS = 120;
/** Reference §6.7: the join polls the command every 500 ms, 30 times. */
export const AUTHORIZE_POLL = { everyMs: 500, tries: 30 };

export const AUTHORIZE_CONTENT_TYPE = "application/vnd.outpost.ssh-authorize+json;version=1";
export const REVOKE_CONTENT_TYPE = "application/vnd.outpost.ssh-revoke+json;version=1";

export type { EndReason } from "./model";
/** Who opens a session: an operator (the console), or an API token (`outpost ssh`: its id and `token <name>`). */
export interface SessionOperator {
  operatorId: string;
  email: string;
  kind?: PrincipalKind;
}
export type PrincipalKind = "operator" | "token";

export interface StartedSession {
  sessionId: string;
  /** Opaque; the browser joins with it. Only its hash is stored. */
  sessionRef: string;
  commandId: string;
  socketToken: string;
  deviceId: string;
}

/** The per-device key lifetime: the longest a session may run, plus a minute to connect. */
export function keyLifetimeSeconds(limits: TerminalLimits): number {
  return Math.min(SESSION_MAX_SECONDS, limits.maxSeconds + 60);
}

/**
 * "Open terminal": on an approved, online device, for an operator. Ends this operator's earlier
 * sessions on the device, opens a remote access lease for the session's lifetime, generates an ed25519
 * pair, stores the private key encrypted behind a new session ref, queues `ssh_authorize` with the
 * public key (expiring with the session) and signs a socket token naming the device.
 */
export async function startSession(
  sql: Sql,
  input: {
    deviceId: string;
    operator: SessionOperator;
    secretKey: string;
    limits: TerminalLimits;
    remoteAccessMaxMinutes: number;
    onlineWindowSeconds: number;
  },
): Promise<StartedSession> {
  const device = isUuid(input.deviceId)
    ? await getDevice(sql, input.deviceId, { onlineWindowSeconds: input.onlineWindowSeconds })
    : undefined;
  if (!device || device.approvalStatus !== "approved")
    throw notFound("No device with this id", "device_not_found");
  if (!device.online) throw deviceOffline();
  await endOperatorSessions(sql, device.id, input.operator.operatorId, "replaced");
  const lifetime = keyLifetimeSeconds(input.limits);
  const lease = await openLease(sql, {
    deviceId: device.id,
    ownerKind: "terminal",
    ...(input.operator.kind === "token"
      ? { apiTokenId: input.operator.operatorId }
      : { operatorId: input.operator.operatorId }),
    holder: input.operator.email,
    ttlSeconds: lifetime,
    maxMinutes: input.remoteAccessMaxMinutes,
    onlineWindowSeconds: input.onlineWindowSeconds,
  });
  const key = ephemeralKey();
  const ref = newSessionRef();
  const sessionId = Bun.randomUUIDv7();
  const recordsInput = await terminalInputRecording(sql);
  await sql`
    insert into terminal_sessions (id, ref_hash, device_id, operator_id, principal_kind, operator_email,
      owned_lease_id, private_key, key_fingerprint, expires_at, records_input)
    values (${sessionId}, ${ref.hash}, ${device.id}::uuid, ${input.operator.operatorId}::uuid,
      ${input.operator.kind ?? "operator"}, ${input.operator.email}, ${lease.id}::uuid, ${encryptPrivateKey(input.secretKey, key.privateKey)},
      ${key.fingerprint}, now() + make_interval(secs => ${lifetime}), ${recordsInput})`;
  const command = await queueCommand(sql, {
    deviceId: device.id,
    type: "ssh_authorize",
    publicKey: key.publicKey,
    payload: {
      content_type: AUTHORIZE_CONTENT_TYPE,
      // The device sees the session id, never the ref (which lets an operator join).
      name: sessionId,
      data: JSON.stringify({ ttl_seconds: lifetime, session_ref: sessionId }),
    },
    ttlSeconds: AUTHORIZE_COMMAND_TTL_SECONDS,
    queuedBy: `${input.operator.email} (terminal)`,
  });
  await sql`update terminal_sessions set command_id = ${command.id}::uuid where id = ${sessionId}::uuid`;
  const socketToken = signCredential(input.secretKey, "socket", {
    d: device.id,
    o: input.operator.operatorId,
    exp: Math.floor(Date.now() / 1000) + SOCKET_TOKEN_SECONDS,
  });
  return { sessionId, sessionRef: ref.ref, commandId: command.id, socketToken, deviceId: device.id };
}

/** The claims of a valid socket token (device and operator), or undefined. */
export function verifySocketToken(secretKey: string, token: string | undefined) {
  const claims = verifyCredential(secretKey, "socket", token);
  return claims?.o ? { deviceId: claims.d, operatorId: claims.o } : undefined;
}

type SessionRow = {
  id: string;
  device_id: string;
  operator_id: string;
  command_id: string | null;
  private_key: Buffer | null;
  expires_at: Date;
  ended_at: Date | null;
  records_input: boolean;
};

export interface JoinedSession {
  sessionId: string;
  deviceId: string;
  operatorId: string;
  privateKey: string;
  /** The user the device authorized the key for (its `ssh_authorize` result). */
  username: string;
  expiresAt: Date;
  recordsInput: boolean;
  hostKey: HostKeyCheck;
}

/**
 * A join of `terminal:<device_id>` (reference §6.7): the ref must name a live session bound to that
 * device and operator; its `ssh_authorize` command is resolved from the session (an optional
 * `command_id` must match it), and the device must have run it (polled
 * every 500 ms, 30 times). On success the private key leaves the database: it is only in this process
 * until SSH connects. Refusals are JoinErrors with the reference's `{reason, code}`.
 */
export async function joinSession(
  sql: Sql,
  input: {
    secretKey: string;
    topicDeviceId: string;
    socket: { deviceId: string; operatorId: string };
    operatorId: string;
    sessionRef: unknown;
    commandId: unknown;
    poll?: { everyMs: number; tries: number };
    onWaiting?(): void;
  },
): Promise<JoinedSession> {
  if (typeof input.sessionRef !== "string" || input.sessionRef === "" || input.sessionRef.length > 200)
    throw new JoinError("session_not_found", "session_not_found");
  const [row] = await sql<SessionRow[]>`
    select id, device_id, operator_id, command_id, private_key, expires_at, ended_at, records_input
    from terminal_sessions where ref_hash = ${refHash(input.sessionRef)}`;
  if (!row) throw new JoinError("session_not_found", "session_not_found");
  if (row.ended_at !== null || row.expires_at.getTime() <= Date.now() || !row.private_key) {
    throw new JoinError("session_expired", "session_expired");
  }
  if (row.device_id !== input.topicDeviceId || input.socket.deviceId !== input.topicDeviceId) {
    await endSession(sql, row.id, "failed");
    throw new JoinError("unauthorized", "device_mismatch");
  }
  if (row.operator_id !== input.operatorId || input.socket.operatorId !== input.operatorId) {
    throw new JoinError("unauthorized", "unauthorized");
  }
  // The spec's join carries only the ref: the session names its own `ssh_authorize` command. A client
  // that also sends `command_id` (Outpost's page does) must send the right one.
  if (input.commandId !== undefined && input.commandId !== null && input.commandId !== "") {
    if (typeof input.commandId !== "string" || !isUuid(input.commandId))
      throw new JoinError("authorization_invalid", "invalid_command_id");
    if (input.commandId !== row.command_id) throw new JoinError("authorization_invalid", "session_mismatch");
  }
  // Before waiting for the device, and again at connection (the key sshd shows must be the pinned one).
  const hostKey = await checkHostKey(sql, row.device_id);
  if (hostKey.state === "changed") {
    await endSession(sql, row.id, "failed");
    throw new JoinError("host_key_changed", "host_key_mismatch");
  }
  const username = await waitForAuthorization(sql, row, input.poll ?? AUTHORIZE_POLL, input.onWaiting);
  const [taken] = await sql<{ private_key: Buffer }[]>`
    update terminal_sessions t set private_key = null
    from (select id, private_key from terminal_sessions where id = ${row.id}::uuid for update) old
    where t.id = old.id and old.private_key is not null and t.ended_at is null
    returning old.private_key`;
  // Someone else joined with this ref in the meantime: one SSH session per ref.
  if (!taken) throw new JoinError("session_expired", "session_expired");
  return {
    sessionId: row.id,
    deviceId: row.device_id,
    operatorId: row.operator_id,
    privateKey: decryptPrivateKey(input.secretKey, taken.private_key),
    username,
    expiresAt: row.expires_at,
    recordsInput: row.records_input,
    hostKey,
  };
}

async function waitForAuthorization(
  sql: Sql,
  row: SessionRow,
  poll: { everyMs: number; tries: number },
  onWaiting?: () => void,
): Promise<string> {
  for (let attempt = 0; attempt < poll.tries; attempt++) {
    const command = row.command_id ? await getCommand(sql, row.command_id) : undefined;
    if (!command || command.type !== "ssh_authorize")
      throw new JoinError("authorization_invalid", "command_not_found");
    if (command.status === "succeeded") {
      const output = (command.output ?? {}) as Record<string, unknown>;
      if (output.session_ref !== row.id) throw new JoinError("authorization_invalid", "session_mismatch");
      return typeof output.target_user === "string" && output.target_user !== ""
        ? output.target_user
        : "outpost-support";
    }
    if (command.status === "failed" || command.status === "expired") {
      await endSession(sql, row.id, "failed");
      throw new JoinError("authorization_failed", "ssh_authorization_failed", command.error ?? undefined);
    }
    if (attempt === 0) onWaiting?.();
    await Bun.sleep(poll.everyMs);
  }
  await endSession(sql, row.id, "failed");
  throw new JoinError("authorization_timeout", "ssh_authorization_timeout");
}

/** The SSH session is up: when it started (the hard limit counts from here). */
export async function markConnected(sql: Sql, sessionId: string): Promise<void> {
  const [row] = await sql<{ device_id: string }[]>`
    update terminal_sessions set connected_at = now() where id = ${sessionId}::uuid returning device_id`;
  // The device page's sessions list shows it running.
  if (row) await announceDevice(sql, row.device_id);
}

/**
 * Ends a session once, whatever ended it: records why, deletes any key material, queues one
 * `ssh_revoke` for the device and releases the lease the session opened. Returns false when it had
 * already ended (a second end does nothing).
 */
export async function endSession(
  sql: Sql,
  sessionId: string,
  reason: EndReason,
  exitStatus?: number,
): Promise<boolean> {
  if (!isUuid(sessionId)) return false;
  const [ended] = await sql<{ device_id: string; owned_lease_id: string | null; operator_email: string }[]>`
    update terminal_sessions set ended_at = now(), end_reason = ${reason}, exit_status = ${exitStatus ?? null},
      private_key = null
    where id = ${sessionId}::uuid and ended_at is null
    returning device_id, owned_lease_id, operator_email`;
  if (!ended) return false;
  // The device page's sessions list shows it ended (before, only a reload did).
  await announceDevice(sql, ended.device_id);
  await queueCommand(sql, {
    deviceId: ended.device_id,
    type: "ssh_revoke",
    payload: {
      content_type: REVOKE_CONTENT_TYPE,
      name: sessionId,
      data: JSON.stringify({ session_ref: sessionId }),
    },
    // The key expires on the device by itself at the session's end; the revoke only has to beat that.
    ttlSeconds: SESSION_MAX_SECONDS,
    queuedBy: `${ended.operator_email} (terminal)`,
  }).catch(() => {}); // a deleted device has nothing left to revoke
  if (ended.owned_lease_id) {
    await endLease(sql, ended.device_id, ended.owned_lease_id, "terminal_ended").catch(() => {});
  }
  return true;
}

async function endOperatorSessions(sql: Sql, deviceId: string, operatorId: string, reason: EndReason) {
  const open = await sql<{ id: string }[]>`select id from terminal_sessions
    where device_id = ${deviceId}::uuid and operator_id = ${operatorId}::uuid and ended_at is null`;
  for (const { id } of open) await endSession(sql, id, reason);
}

/**
 * Why a running session must stop now, if it must: ended elsewhere (another process, an operator),
 * its lease ended, or its operator was disabled. Checked by the session's owner every few seconds.
 */
export async function stopReason(
  sql: Sql,
  sessionId: string,
  operatorActive: (operatorId: string, kind: PrincipalKind) => Promise<boolean>,
): Promise<EndReason | "already_ended" | undefined> {
  const [row] = await sql<
    {
      ended_at: Date | null;
      device_id: string;
      owned_lease_id: string | null;
      operator_id: string;
      principal_kind: PrincipalKind;
    }[]
  >`select ended_at, device_id, owned_lease_id, operator_id, principal_kind
    from terminal_sessions where id = ${sessionId}::uuid`;
  if (!row || row.ended_at !== null) return "already_ended";
  if (row.owned_lease_id && !(await leaseIsActive(sql, row.device_id, row.owned_lease_id)))
    return "lease_ended";
  if (!(await operatorActive(row.operator_id, row.principal_kind))) return "operator_disabled";
  return undefined;
}

/** Sessions that can no longer be joined and never connected, or whose process vanished: ended. */
export async function sweepSessions(sql: Sql): Promise<number> {
  const stale = await sql<{ id: string }[]>`select id from terminal_sessions
    where ended_at is null and expires_at <= now()`;
  let ended = 0;
  for (const { id } of stale) if (await endSession(sql, id, "expired")) ended++;
  return ended;
}

export { noteHostKey, staleHostKeys } from "./host-keys";
export { hostKeyText } from "./keys";
export { pruneRecordings } from "./recording";

/** While a terminal waits for its key to be authorized, the device polls this often (under the rate limit). */
export const AUTHORIZING_POLL_SECONDS = 3;

/** The heartbeat's remote-access reply, with a faster poll while a terminal of the device waits for its key. */
export async function terminalHeartbeatHint<T extends { pollIntervalSeconds: number }>(
  sql: Sql,
  deviceId: string,
  access: T,
): Promise<T> {
  const [row] = await sql<{ waiting: boolean }[]>`select exists (select 1 from terminal_sessions
    where device_id = ${deviceId}::uuid and ended_at is null and connected_at is null and expires_at > now()) as waiting`;
  return row!.waiting
    ? { ...access, pollIntervalSeconds: Math.min(access.pollIntervalSeconds, AUTHORIZING_POLL_SECONDS) }
    : access;
}

/** 404 unless the session exists; used by pages before they show a recording. */
export function sessionNotFound() {
  return new AppError(404, "terminal_session_not_found", "No terminal session with this id");
}
export { loadTerminalTab, TerminalPanel, type TerminalTabData } from "./device-tab";
