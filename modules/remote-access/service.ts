import type { Sql, TransactionSql } from "postgres";
import { getDevice, setRemoteAccessRequested, wakeDevice } from "../devices/service";
import type { Config } from "../platform/config";
import { AppError, notFound } from "../platform/errors";
import { tunnelFingerprint } from "../platform/host-key";
import { isUuid } from "../platform/json-body";
import { auditLeases } from "./lease-audit";
import { signCredential } from "./token";

/** A console lease lapses this long after its page's last renewal (the page vanished silently). */
export const CONSOLE_LEASE_SECONDS = 120;
/** Default lifetime of an API lease without `ttl_seconds`. */
export const API_LEASE_DEFAULT_SECONDS = 15 * 60;
/** A tunnel token never outlives this, whatever the lease (issue #11: at most 65 minutes). */
export const TOKEN_MAX_SECONDS = 65 * 60;
/** Poll interval the heartbeat asks for while a lease is active, so the tunnel starts in seconds. */
export const FAST_POLL_SECONDS = 5;

/** Who holds a lease: a device page (renewed by its live connection), the API, or a browser terminal. */
export type LeaseOwnerKind = "console" | "api" | "terminal";

/**
 * Why a lease ended: `operator_closed` (Close remote access in the console: every lease of the device; the
 * closer's pages open none until someone asks again), `closed` (its holder released it: the API's DELETE), `page_left` (the
 * device page that held it went away), `terminal_ended` (the terminal session it served ended),
 * `expired`, `device_offline`, `revoked`.
 */
export type EndReason =
  | "operator_closed"
  | "closed"
  | "page_left"
  | "terminal_ended"
  | "expired"
  | "device_offline"
  | "revoked";

export interface Lease {
  id: string;
  deviceId: string;
  ownerKind: LeaseOwnerKind;
  operatorId: string | null;
  apiTokenId: string | null;
  holder: string;
  createdAt: Date;
  renewedAt: Date;
  expiresAt: Date;
  maxExpiresAt: Date;
  endedAt: Date | null;
  endReason: string | null;
  endedBy: string | null;
}

type LeaseRow = {
  id: string;
  device_id: string;
  owner_kind: LeaseOwnerKind;
  operator_id: string | null;
  api_token_id: string | null;
  holder: string;
  created_at: Date;
  renewed_at: Date;
  expires_at: Date;
  max_expires_at: Date;
  ended_at: Date | null;
  end_reason: string | null;
  ended_by: string | null;
};

function toLease(row: LeaseRow): Lease {
  return {
    id: row.id,
    deviceId: row.device_id,
    ownerKind: row.owner_kind,
    operatorId: row.operator_id,
    apiTokenId: row.api_token_id,
    holder: row.holder,
    createdAt: row.created_at,
    renewedAt: row.renewed_at,
    expiresAt: row.expires_at,
    maxExpiresAt: row.max_expires_at,
    endedAt: row.ended_at,
    endReason: row.end_reason,
    endedBy: row.ended_by,
  };
}

export const deviceOffline = () =>
  new AppError(409, "device_offline", "The device is offline: remote access needs a device that is online");
const deviceNotFound = () => notFound("No device with this id", "device_not_found");
const leaseNotFound = () => notFound("No active lease with this id for this device", "lease_not_found");

/**
 * Serialises lease changes of one device (open, end, sweep) so the device flag computed at the end of
 * each transaction is right even when two of them race.
 */
async function lockDevice(tx: TransactionSql, deviceId: string) {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`remote-access:${deviceId}`}, 0))`;
}

/**
 * Sets `devices.remote_access_requested` from the leases, inside the caller's transaction; a change
 * wakes the device's agent at commit, so its tunnel starts (or stops) now, not at its next poll.
 */
async function syncDeviceFlag(tx: Sql, deviceId: string) {
  const [row] = await tx<{ active: boolean }[]>`
    select exists (select 1 from remote_access_leases
      where device_id = ${deviceId}::uuid and ended_at is null and expires_at > now()) as active`;
  if (await setRemoteAccessRequested(tx, deviceId, row!.active)) await wakeDevice(tx, deviceId);
}

export interface OpenLeaseInput {
  deviceId: string;
  ownerKind: LeaseOwnerKind;
  operatorId?: string;
  apiTokenId?: string;
  holder: string;
  ttlSeconds: number;
  maxMinutes: number;
  onlineWindowSeconds: number;
}

/** Opens a lease on an approved, online device (404 / 409 device_offline otherwise). */
export async function openLease(sql: Sql, input: OpenLeaseInput): Promise<Lease> {
  const device = await getDevice(sql, input.deviceId, { onlineWindowSeconds: input.onlineWindowSeconds });
  if (!device || device.approvalStatus !== "approved") throw deviceNotFound();
  if (!device.online) throw deviceOffline();
  return sql.begin(async (tx) => {
    await lockDevice(tx, device.id);
    const [row] = await tx<LeaseRow[]>`
      insert into remote_access_leases
        (id, device_id, owner_kind, operator_id, api_token_id, holder, expires_at, max_expires_at)
      values (${Bun.randomUUIDv7()}, ${device.id}::uuid, ${input.ownerKind}, ${input.operatorId ?? null},
        ${input.apiTokenId ?? null}, ${input.holder},
        now() + make_interval(secs => least(${input.ttlSeconds}::int, ${input.maxMinutes * 60}::int)),
        now() + make_interval(mins => ${input.maxMinutes}::int))
      returning *`;
    await syncDeviceFlag(tx as unknown as Sql, device.id);
    await auditLeases(tx as unknown as Sql, "start", [row!]);
    return toLease(row!);
  }) as Promise<Lease>;
}

/**
 * Extends an active lease by `ttlSeconds` from now, never past its hard maximum. Returns the lease, or
 * undefined when it already ended (the caller then opens a new one or shows that access ended).
 */
export async function renewLease(sql: Sql, leaseId: string, ttlSeconds: number): Promise<Lease | undefined> {
  if (!isUuid(leaseId)) return undefined;
  const [row] = await sql<LeaseRow[]>`
    update remote_access_leases
    set renewed_at = now(), expires_at = least(max_expires_at, now() + make_interval(secs => ${ttlSeconds}::int))
    where id = ${leaseId}::uuid and ended_at is null and expires_at > now()
    returning *`;
  return row && toLease(row);
}

/**
 * Ends one open lease of a device (404 lease_not_found when there is none with this id). Any operator may
 * end any lease: closing access is never the risky direction.
 */
export async function endLease(
  sql: Sql,
  deviceId: string,
  leaseId: string,
  reason: EndReason,
  endedBy?: string,
): Promise<Lease> {
  if (!isUuid(deviceId) || !isUuid(leaseId)) throw leaseNotFound();
  return sql.begin(async (tx) => {
    await lockDevice(tx, deviceId);
    const [row] = await tx<LeaseRow[]>`
      update remote_access_leases set ended_at = now(), end_reason = ${reason}, ended_by = ${endedBy ?? null}
      where id = ${leaseId}::uuid and device_id = ${deviceId}::uuid and ended_at is null
      returning *`;
    if (!row) throw leaseNotFound();
    await syncDeviceFlag(tx as unknown as Sql, deviceId);
    await auditLeases(tx as unknown as Sql, "end", [row]);
    return toLease(row);
  }) as Promise<Lease>;
}

/**
 * Ends a console lease that no page holds any more (no live row in remote_access_page_streams, from any
 * web process): the end of a page's grace period. Returns whether it ended.
 */
export async function endUnwatchedLease(sql: Sql, deviceId: string, leaseId: string): Promise<boolean> {
  if (!isUuid(deviceId) || !isUuid(leaseId)) return false;
  return sql.begin(async (tx) => {
    await lockDevice(tx, deviceId);
    const ended = await tx<LeaseRow[]>`
      update remote_access_leases l set ended_at = now(), end_reason = 'page_left'
      where l.id = ${leaseId}::uuid and l.device_id = ${deviceId}::uuid and l.ended_at is null
        and not exists (select 1 from remote_access_page_streams s
          where s.lease_id = l.id and s.expires_at > now())
      returning l.*`;
    if (ended.length > 0) {
      await syncDeviceFlag(tx as unknown as Sql, deviceId);
      await auditLeases(tx as unknown as Sql, "end", ended);
    }
    return ended.length > 0;
  }) as Promise<boolean>;
}

/**
 * Ends every open lease of a device (it was revoked or deleted, or an operator closed its remote
 * access); returns how many ended.
 */
export async function endDeviceLeases(
  sql: Sql,
  deviceId: string,
  reason: EndReason,
  endedBy?: string,
): Promise<number> {
  if (!isUuid(deviceId)) return 0;
  return sql.begin(async (tx) => {
    await lockDevice(tx, deviceId);
    const ended = await tx<LeaseRow[]>`update remote_access_leases
      set ended_at = now(), end_reason = ${reason}, ended_by = ${endedBy ?? null}
      where device_id = ${deviceId}::uuid and ended_at is null
      returning *`;
    await syncDeviceFlag(tx as unknown as Sql, deviceId);
    await auditLeases(tx as unknown as Sql, "end", ended);
    return ended.length;
  }) as Promise<number>;
}

/**
 * Ends leases that expired and leases of devices that went offline, and keeps the device flags in step,
 * one device per transaction. Returns how many leases ended. Run by jobs/remote-access-sweep.ts.
 */
export async function sweepLeases(sql: Sql, onlineWindowSeconds: number): Promise<number> {
  const open = await sql<{ device_id: string }[]>`
    select distinct device_id from remote_access_leases where ended_at is null`;
  let ended = 0;
  for (const { device_id: deviceId } of open) {
    const device = await getDevice(sql, deviceId, { onlineWindowSeconds });
    const offline = !device || !device.online || device.approvalStatus !== "approved";
    ended += await sql.begin(async (tx) => {
      await lockDevice(tx, deviceId);
      const rows = await tx<LeaseRow[]>`
        update remote_access_leases
        set ended_at = now(), end_reason = case when expires_at <= now() then 'expired' else 'device_offline' end
        where device_id = ${deviceId}::uuid and ended_at is null and (${offline} or expires_at <= now())
        returning *`;
      await syncDeviceFlag(tx as unknown as Sql, deviceId);
      await auditLeases(tx as unknown as Sql, "end", rows);
      return rows.length;
    });
  }
  return ended;
}

/** Who closed a device's remote access and when, while it stays closed (see `remoteAccessClosure`). */
export interface RemoteAccessClosure {
  by: string;
  at: Date;
}

/**
 * Set while an operator's Close remote access is the device's latest word: its newest lease ended with
 * `operator_closed`. The closing operator's device pages then open no lease by themselves until someone
 * asks again (Reopen, the API, a terminal session, another operator's visit: each opens a newer lease).
 */
export async function remoteAccessClosure(
  sql: Sql,
  deviceId: string,
): Promise<RemoteAccessClosure | undefined> {
  if (!isUuid(deviceId)) return undefined;
  const [row] = await sql<LeaseRow[]>`select * from remote_access_leases where device_id = ${deviceId}::uuid
    order by created_at desc limit 1`;
  if (!row || row.end_reason !== "operator_closed" || !row.ended_at) return undefined;
  return { by: row.ended_by ?? "an operator", at: row.ended_at };
}

/** Active leases of a device, newest first. */
export async function activeLeases(sql: Sql, deviceId: string): Promise<Lease[]> {
  if (!isUuid(deviceId)) return [];
  const rows = await sql<LeaseRow[]>`
    select * from remote_access_leases
    where device_id = ${deviceId}::uuid and ended_at is null and expires_at > now()
    order by created_at desc`;
  return rows.map(toLease);
}

/** Whether this lease is active and belongs to this device. */
export async function leaseIsActive(sql: Sql, deviceId: string, leaseId: string): Promise<boolean> {
  if (!isUuid(deviceId) || !isUuid(leaseId)) return false;
  const rows = await sql`select 1 from remote_access_leases where id = ${leaseId}::uuid
    and device_id = ${deviceId}::uuid and ended_at is null and expires_at > now()`;
  return rows.length > 0;
}

/**
 * What the heartbeat reply adds for a device whose flag is set: a tunnel token signed with SECRET_KEY,
 * naming the device, valid until the latest hard maximum of its active leases (≤ 65 minutes), and the
 * fast-poll hint. Every heartbeat gets a fresh token, so the agent always holds one well before expiry.
 */
export async function heartbeatRemoteAccess(
  sql: Sql,
  config: Pick<Config, "secretKey" | "dataDir">,
  deviceId: string,
): Promise<{ token: string; pollIntervalSeconds: number; hostKey: string } | undefined> {
  const [row] = await sql<{ until: Date | null }[]>`
    select max(max_expires_at) as until from remote_access_leases
    where device_id = ${deviceId}::uuid and ended_at is null and expires_at > now()`;
  if (!row?.until) return undefined;
  const untilMs = Math.min(row.until.getTime(), Date.now() + TOKEN_MAX_SECONDS * 1000);
  const token = signCredential(config.secretKey, "tunnel", { d: deviceId, exp: Math.floor(untilMs / 1000) });
  return { token, pollIntervalSeconds: FAST_POLL_SECONDS, hostKey: tunnelFingerprint(config.dataDir) };
}

/** Open leases and connected tunnels (the remote-access gauges of a metrics scrape). */
export async function remoteAccessCounts(sql: Sql): Promise<{ leases: number; tunnels: number }> {
  const [row] = await sql<{ leases: number; tunnels: number }[]>`
    select (select count(*)::int from remote_access_leases where ended_at is null and expires_at > now()) as leases,
      (select count(*)::int from tunnel_connections) as tunnels`;
  return row!;
}

export { RemoteAccessKeeper, RemoteAccessSlot } from "./device-tab";
export { deviceHost } from "./hosts";
export { type MuxAddress, MuxError, type MuxRoute, tunnelSocket } from "./mux-client";
export { verifyCredential } from "./token";
export { signCredential };
