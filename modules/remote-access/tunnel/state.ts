import type { Sql } from "postgres";

/**
 * Tunnel state in PostgreSQL (`tunnel_connections`), so every web process and the console know which
 * device is connected to which tunnel process, and since when.
 */
export async function recordTunnel(sql: Sql, deviceId: string, instance: string, forwards: string[]) {
  await sql`insert into tunnel_connections (device_id, instance, connected_at, forwards)
    values (${deviceId}::uuid, ${instance}, now(), ${forwards}::text[])
    on conflict (device_id) do update set instance = excluded.instance, forwards = excluded.forwards,
      connected_at = case when tunnel_connections.instance = excluded.instance
        then tunnel_connections.connected_at else excluded.connected_at end`;
}

/** Forgets a device's tunnel, if this process still holds it (another may have taken over). */
export async function forgetTunnel(sql: Sql, deviceId: string, instance: string) {
  await sql`delete from tunnel_connections where device_id = ${deviceId}::uuid and instance = ${instance}`;
}

export async function forgetInstance(sql: Sql, instance: string) {
  await sql`delete from tunnel_connections where instance = ${instance}`;
}

export interface TunnelState {
  instance: string;
  connectedAt: Date;
  forwards: string[];
}

export async function tunnelState(sql: Sql, deviceId: string): Promise<TunnelState | undefined> {
  const [row] = await sql<{ instance: string; connected_at: Date; forwards: string[] }[]>`
    select instance, connected_at, forwards from tunnel_connections where device_id = ${deviceId}::uuid`;
  return row && { instance: row.instance, connectedAt: row.connected_at, forwards: row.forwards };
}

/** Which of these devices have an active lease (one query). */
export async function activeLeaseDevices(sql: Sql, deviceIds: string[]): Promise<Set<string>> {
  if (deviceIds.length === 0) return new Set();
  const rows = await sql<{ device_id: string }[]>`
    select distinct device_id::text from remote_access_leases
    where device_id = any(${deviceIds}::uuid[]) and ended_at is null and expires_at > now()`;
  return new Set(rows.map((r) => r.device_id));
}
