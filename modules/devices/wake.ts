/**
 * Waking an agent between its polls (docs/device-api.md, "Waiting for work"):
 *
 *   lease opened / command queued ── pg_notify('outpost_device_wake', '<device id>') ──▶ every web
 *   process (LISTEN, one connection each) ──▶ the held `GET /api/v1/devices/{id}/wait` of that device
 *   answers `wake: true` ──▶ the agent polls at once instead of at the end of its interval.
 *
 * A wait first registers, then reads the device's state (so a change committed in between is either
 * read or heard): it answers at once when the device already has queued commands or its remote-access
 * state differs from what the agent holds.
 */
import type { Clock, ClockTimer } from "../../shared/clock";
import type { Database, Sql } from "../platform/database";
import { isUuid } from "../platform/json-body";
import type { Logger } from "../platform/logger";
import { deviceWaitsHeld } from "../platform/metrics";
import { type AuthRow, checkCredentials, deviceNotFound } from "./device-auth";

const WAKE_CHANNEL = "outpost_device_wake";

/** Why a wait answered early; `notified`: woken, but the work was gone by the time it looked. */
export type WakeReason = "remote_access" | "commands" | "notified";

/** Asks the device's agent to poll now. Inside a transaction, PostgreSQL sends it at commit. */
export async function wakeDevice(sql: Sql, deviceId: string): Promise<void> {
  await sql`select pg_notify(${WAKE_CHANNEL}, ${deviceId})`;
}

type WaitRow = AuthRow & { remote_access_requested: boolean; has_commands: boolean };

/**
 * Authenticates the wait (the heartbeat's checks, in its order) and tells whether the device has work
 * now: queued commands, or a remote-access state other than the one the agent holds.
 */
async function workNow(sql: Sql, input: WaitInput): Promise<WakeReason | undefined> {
  const { deviceId, apiKey, holdsRemoteAccess } = input;
  if (!isUuid(deviceId)) throw deviceNotFound();
  const [row] = await sql<WaitRow[]>`
    select d.approval_status, d.api_token_hash, d.heartbeat_window_started_at, d.heartbeat_window_count,
      d.remote_access_requested,
      exists (select 1 from pending_commands c
        where c.device_id = d.id and c.status = 'queued' and c.expires_at > now()) as has_commands
    from devices d where d.id = ${deviceId}::uuid`;
  if (!row) throw deviceNotFound();
  checkCredentials(row, apiKey);
  if (row.has_commands) return "commands";
  // A token without the flag: access ended, the tunnel should stop. The flag without a token: access
  // starts — if a lease is still active (the flag outlives an expired lease until the sweep, and a
  // heartbeat then gives no token: answering at once would make the agent poll again and again).
  if (holdsRemoteAccess && !row.remote_access_requested) return "remote_access";
  if (!holdsRemoteAccess && row.remote_access_requested && (await input.remoteAccessActive(deviceId)))
    return "remote_access";
  return undefined;
}

export interface WaitInput {
  deviceId: string;
  apiKey: string | undefined;
  /** Whether the agent holds a remote-access token (its last heartbeat reply carried one). */
  holdsRemoteAccess: boolean;
  /** Whether the device has an active remote-access lease (its next heartbeat would carry a token). */
  remoteAccessActive(deviceId: string): Promise<boolean>;
  timeoutMs: number;
  /** The request went away: stop waiting. */
  signal?: AbortSignal;
}

/** The held waits of one web process, woken through LISTEN. */
export class DeviceWaits {
  /** Per device, the held waits' callbacks: `true` when notified, `false` when the process stops. */
  private waiters = new Map<string, Set<(notified: boolean) => void>>();
  private listening: Promise<{ unlisten(): Promise<void> }> | undefined;
  private closed = false;

  constructor(
    private readonly database: Database,
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {}

  /** Waits held for one device. */
  heldFor(deviceId: string): number {
    return this.waiters.get(deviceId)?.size ?? 0;
  }

  /** Devices with held waits (a device's entry goes with its last wait). */
  get devicesWaiting(): number {
    return this.waiters.size;
  }

  /**
   * Answers `{ wake: reason }` as soon as the device has work, `{ wake: undefined }` after timeoutMs,
   * when the request goes away, or when the process stops. Credential errors are thrown, typed.
   */
  async wait(input: WaitInput): Promise<{ wake: WakeReason | undefined }> {
    if (this.closed) return { wake: undefined };
    this.listening ??= this.database.sql
      .listen(WAKE_CHANNEL, (deviceId) => this.wakeLocal(deviceId))
      .catch((error) => {
        this.listening = undefined; // the next wait tries again
        throw error;
      });
    await this.listening;
    let wake: (notified: boolean) => void = () => {};
    const woken = new Promise<boolean>((resolve) => {
      wake = resolve;
    });
    const set = this.waiters.get(input.deviceId) ?? new Set();
    set.add(wake);
    this.waiters.set(input.deviceId, set);
    deviceWaitsHeld.inc();
    // The timeout runs from the moment the wait is held (a test moving the clock on ends it).
    let timer: ClockTimer | undefined;
    let onAbort: (() => void) | undefined;
    const gaveUp = new Promise<boolean>((resolve) => {
      timer = this.clock.setTimeout(() => resolve(false), input.timeoutMs);
      onAbort = () => resolve(false);
      input.signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const now = await workNow(this.database.sql, input);
      if (now) return { wake: now };
      if (!(await Promise.race([woken, gaveUp]))) return { wake: undefined };
      // Say why: the agent polls either way, the reason is for its log.
      const reason = await workNow(this.database.sql, input);
      return { wake: reason ?? "notified" };
    } finally {
      timer?.clear();
      if (onAbort) input.signal?.removeEventListener("abort", onAbort);
      set.delete(wake);
      if (set.size === 0 && this.waiters.get(input.deviceId) === set) this.waiters.delete(input.deviceId);
      deviceWaitsHeld.dec();
    }
  }

  private wakeLocal(deviceId: string): void {
    for (const wake of this.waiters.get(deviceId) ?? []) wake(true);
  }

  /** Answers every held wait (`wake` unset: poll when you like) and stops listening: shutdown. */
  async close(): Promise<void> {
    this.closed = true;
    for (const set of this.waiters.values()) for (const wake of set) wake(false);
    const listening = this.listening;
    this.listening = undefined;
    await listening?.then(
      (l) => l.unlisten(),
      () => {},
    );
    this.logger.debug("device waits closed");
  }
}
