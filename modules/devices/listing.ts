// Reads of devices for the API and other features: one device, the filtered list (counts: ./fleet-counts.ts).
import type { Sql } from "../platform/database";
import { badRequest } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { keysetPage, parseKeysetCursor } from "../platform/keyset-cursor";
import type { DeviceCondition } from "./conditions";
import {
  APPROVAL_STATUSES,
  type ApprovalStatus,
  DEVICE_NAME_SQL,
  type Device,
  type DeviceRow,
  deviceColumns,
  toDevice,
} from "./rows";
import { fewSeenWithin, seenWithinCondition } from "./sightings";

export async function getDevice(
  sql: Sql,
  id: string,
  options: { onlineWindowSeconds: number },
): Promise<Device | undefined> {
  if (!isUuid(id)) return undefined;
  const [row] = await sql<DeviceRow[]>`
    select ${deviceColumns(sql, options.onlineWindowSeconds)} from devices d where d.id = ${id}::uuid`;
  return row && toDevice(row);
}

/** Display names of these devices (absent ids are left out), for features that list device ids. */
export async function deviceNames(sql: Sql, ids: string[]): Promise<Map<string, string>> {
  const wanted = [...new Set(ids.filter(isUuid))];
  if (wanted.length === 0) return new Map();
  const rows = await sql<{ id: string; name: string }[]>`
    select d.id, ${sql.unsafe(DEVICE_NAME_SQL)} as name from devices d
    where d.id = any(${wanted}::uuid[])`;
  return new Map(rows.map((r) => [r.id, r.name]));
}

/**
 * The devices a condition matches (undefined: every device), with their names, oldest first, at most
 * `limit` + 1 of them (so a caller knows when there are more): the members a rollout snapshots.
 */
export async function matchingDevices(
  sql: Sql,
  condition: DeviceCondition | undefined,
  limit: number,
): Promise<{ id: string; name: string }[]> {
  return sql<{ id: string; name: string }[]>`
    select d.id, ${sql.unsafe(DEVICE_NAME_SQL)} as name from devices d
    where ${condition ?? sql`true`} order by d.created_at, d.id limit ${limit + 1}`;
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
  /**
   * A condition over `devices d` built from deviceConditions by the fleet query language
   * (`?q=` / `?view=`, docs/fleet.md), ANDed with the filters above.
   */
  matching?: DeviceCondition;
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

/** `%text%` for LIKE/ILIKE, with the pattern characters in `text` escaped. */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The approval, connectivity and product conditions (`and ...`, over `devices d`); the API list and
 * the console list search differently and add their own search condition.
 */
export function filterConditions(sql: Sql, filters: DeviceFilters, onlineWindowSeconds: number) {
  const window = onlineWindowSeconds;
  return sql`
    ${filters.approvalStatus ? sql`and d.approval_status = ${filters.approvalStatus}::device_approval_status` : sql``}
    ${filters.connectivityStatus === "online" ? sql`and d.last_seen_at >= now() - make_interval(secs => ${window})` : sql``}
    ${filters.connectivityStatus === "offline" ? sql`and (d.last_seen_at is null or d.last_seen_at < now() - make_interval(secs => ${window}))` : sql``}
    ${filters.product ? sql`and d.product_name = ${filters.product}` : sql``}
    ${filters.remoteAccessRequested !== undefined ? sql`and d.remote_access_requested = ${filters.remoteAccessRequested}` : sql``}
    ${filters.matching ? sql`and (${filters.matching})` : sql``}`;
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
  // With few devices online, the online filter looks only at those sighted (see sightings.ts).
  const fewOnline = options.connectivityStatus === "online" && (await fewSeenWithin(sql, window));
  const rows = await sql<(DeviceRow & { sort_key: string })[]>`
    select ${deviceColumns(sql, window)}, (${sql.unsafe(sort.expr)})::text as sort_key
    from devices d
    where true
      ${filterConditions(sql, options, window)}
      ${fewOnline ? seenWithinCondition(sql, window) : sql``}
      ${
        options.search
          ? sql`and (d.mac_address ilike ${likeContains(options.search)} or d.product_name ilike ${likeContains(options.search)}
              or d.ipv4_address ilike ${likeContains(options.search)} or d.id::text = ${options.search.toLowerCase()}
              or replace(d.mac_address, ':', '') ilike ${likeContains(options.search.replace(/[:.-]/g, ""))})`
          : sql``
      }
      ${after ? sql`and (${sql.unsafe(sort.expr)}, d.id) ${sql.unsafe(op)} (${after[0]}::${sql.unsafe(sort.cast)}, ${after[1]}::uuid)` : sql``}
    order by ${sql.unsafe(sort.expr)} ${sql.unsafe(order)}, d.id ${sql.unsafe(order)}
    limit ${limit + 1}`;
  const { page, nextCursor } = keysetPage(rows, limit, (last) => [last.sort_key, last.id]);
  return { devices: page.map(toDevice), nextCursor, activeFilters: activeFilters(options) };
}
