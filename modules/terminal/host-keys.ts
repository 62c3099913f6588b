import type { Sql } from "../platform/database";
import { isUuid } from "../platform/json-body";
import { parseHostKey } from "./keys";

export type HostKeyCheck =
  /** No key known yet: the first connection pins the key it sees. */
  | { state: "unpinned" }
  | { state: "pinned"; publicKey: string; fingerprint: string }
  /** The device reported another key than the pinned one: terminals are refused until an admin accepts it. */
  | { state: "changed"; publicKey: string; fingerprint: string; reportedFingerprint: string };

export interface HostKeyView {
  fingerprint: string;
  pinnedAt: Date;
  pinnedBy: string;
  reportedFingerprint: string | null;
  reportedAt: Date | null;
}

/**
 * The heartbeat's part (modules/heartbeat/service.ts: over its `input` and `accepted`): the `ord` of
 * each accepted heartbeat whose `host_key` (hostKeyText of its `ssh_host_key`) noteHostKey would write.
 * The steady state, the pinned key reported again, costs one primary-key probe in the batch and no
 * statement of its own, whatever the fleet's size.
 */
export function staleHostKeys(sql: Sql) {
  return sql`select a.ord from accepted a join input i on i.ord = a.ord
      left join device_host_keys k on k.device_id = a.id
      where i.host_key is not null and (k.device_id is null or ${changesPin(sql, "k", sql`i.host_key`)})`;
}

/**
 * Whether reporting `key` changes the pinned row `pinned` (an alias of device_host_keys): back to the
 * pin while another key was reported, or a key other than the pin not reported yet. The one rule both
 * the batch's check (staleHostKeys) and the write (noteHostKey) apply.
 */
function changesPin(sql: Sql, pinned: string, key: ReturnType<Sql>) {
  const row = sql(pinned);
  return sql`((${row}.public_key = ${key} and ${row}.reported_key is not null)
    or (${row}.public_key <> ${key} and ${row}.reported_key is distinct from ${key}))`;
}

/**
 * A heartbeat's `ssh_host_key`: pinned when the device has none, kept as "reported" when it differs
 * from the pin (which then refuses terminals), cleared from "reported" when it matches again. Called
 * only for the keys staleHostKeys finds; a line that is no key is ignored.
 */
export async function noteHostKey(sql: Sql, deviceId: string, line: unknown): Promise<void> {
  const key = parseHostKey(line);
  if (!key) return;
  await sql`
    insert into device_host_keys (device_id, public_key, fingerprint, pinned_by)
    values (${deviceId}::uuid, ${key.publicKey}, ${key.fingerprint}, 'first heartbeat')
    on conflict (device_id) do update set
      reported_key = case when device_host_keys.public_key = excluded.public_key then null else excluded.public_key end,
      reported_fingerprint = case when device_host_keys.public_key = excluded.public_key then null else excluded.fingerprint end,
      reported_at = case when device_host_keys.public_key = excluded.public_key then null else now() end
    where ${changesPin(sql, "device_host_keys", sql`excluded.public_key`)}`;
}

/** What a terminal may trust for this device's sshd. */
export async function checkHostKey(sql: Sql, deviceId: string): Promise<HostKeyCheck> {
  const [row] = await sql<{ public_key: string; fingerprint: string; reported_fingerprint: string | null }[]>`
    select public_key, fingerprint, reported_fingerprint from device_host_keys where device_id = ${deviceId}::uuid`;
  if (!row) return { state: "unpinned" };
  if (row.reported_fingerprint) {
    return {
      state: "changed",
      publicKey: row.public_key,
      fingerprint: row.fingerprint,
      reportedFingerprint: row.reported_fingerprint,
    };
  }
  return { state: "pinned", publicKey: row.public_key, fingerprint: row.fingerprint };
}

/** Trust on first use, at the first connection of a device that never reported its key. */
export async function pinOnConnect(sql: Sql, deviceId: string, publicKey: string, fingerprint: string) {
  await sql`insert into device_host_keys (device_id, public_key, fingerprint, pinned_by)
    values (${deviceId}::uuid, ${publicKey}, ${fingerprint}, 'first connection')
    on conflict (device_id) do nothing`;
}

/** An admin accepts the key the device now reports (after a reinstall, say). False when none is pending. */
export async function acceptReportedHostKey(sql: Sql, deviceId: string, by: string): Promise<boolean> {
  if (!isUuid(deviceId)) return false;
  const rows =
    await sql`update device_host_keys set public_key = reported_key, fingerprint = reported_fingerprint,
      pinned_at = now(), pinned_by = ${by}, reported_key = null, reported_fingerprint = null, reported_at = null
    where device_id = ${deviceId}::uuid and reported_key is not null`;
  return rows.count > 0;
}

export async function hostKeyView(sql: Sql, deviceId: string): Promise<HostKeyView | undefined> {
  if (!isUuid(deviceId)) return undefined;
  const [row] = await sql<
    {
      fingerprint: string;
      pinned_at: Date;
      pinned_by: string;
      reported_fingerprint: string | null;
      reported_at: Date | null;
    }[]
  >`select fingerprint, pinned_at, pinned_by, reported_fingerprint, reported_at
    from device_host_keys where device_id = ${deviceId}::uuid`;
  if (!row) return undefined;
  return {
    fingerprint: row.fingerprint,
    pinnedAt: row.pinned_at,
    pinnedBy: row.pinned_by,
    reportedFingerprint: row.reported_fingerprint,
    reportedAt: row.reported_at,
  };
}
