import type { Sql } from "../platform/database";

/** What other features (alerts) need to know about a device, without its telemetry or secrets. */
export interface DeviceBrief {
  id: string;
  macAddress: string;
  productName: string | null;
  /** `schema.product` of the announced telemetry schema (builder schema id), or null. */
  schemaProduct: string | null;
  /** `metadata.name` or `metadata.hostname` when the device reported one. */
  name: string | null;
  approved: boolean;
  lastSeenAt: Date | null;
}

type Row = {
  id: string;
  mac_address: string;
  product_name: string | null;
  schema_product: string | null;
  name: string | null;
  approved: boolean;
  last_seen_at: Date | null;
};

const toSummary = (r: Row): DeviceBrief => ({
  id: r.id,
  macAddress: r.mac_address,
  productName: r.product_name,
  schemaProduct: r.schema_product,
  name: r.name,
  approved: r.approved,
  lastSeenAt: r.last_seen_at,
});

const COLUMNS = (
  sql: Sql,
) => sql`id, mac_address, product_name, (select nullif(s.schema->>'product', '') from telemetry_schemas s where s.hash = devices.schema_hash)
    as schema_product,
  coalesce(metadata->>'name', metadata->>'hostname') as name, approval_status = 'approved' as approved, last_seen_at`;

export async function deviceSummaries(sql: Sql, ids: string[]): Promise<Map<string, DeviceBrief>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<Row[]>`select ${COLUMNS(sql)} from devices where id = any(${ids}::uuid[])`;
  return new Map(rows.map((r) => [r.id, toSummary(r)]));
}

/** Approved devices not seen for `minutes` (never-seen devices are not offline: reference §7.4). */
export async function silentApprovedDevices(
  sql: Sql,
  minutes: number,
  limit = 10_000,
): Promise<DeviceBrief[]> {
  const rows = await sql<Row[]>`select ${COLUMNS(sql)} from devices
    where approval_status = 'approved' and last_seen_at < now() - make_interval(mins => ${minutes})
    order by last_seen_at limit ${limit}`;
  return rows.map(toSummary);
}

/** Device ids matching a search (MAC, product or id prefix), for the alert list's device filter. */
export async function findDeviceIds(sql: Sql, search: string, limit = 500): Promise<string[]> {
  const needle = `%${search.trim().replace(/[\\%_]/g, "\\$&")}%`;
  const rows = await sql<{ id: string }[]>`select id from devices
    where mac_address ilike ${needle} or product_name ilike ${needle} or id::text ilike ${needle}
    limit ${limit}`;
  return rows.map((r) => r.id);
}
