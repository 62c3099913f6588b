/**
 * Reads and writes of the device pages (device list, add device; the dashboard's newest devices)
 * that the device API does not need. Same table, same conventions as ./listing.ts; the functions
 * `device_display_name` and `device_search_text` and the (sort key, id) indexes come from
 * migration 0005 (docs/console.md).
 */

import type { Row as AnyRow, PendingQuery } from "postgres";
import type { Sql } from "../platform/database";
import { badRequest } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { decodeKeysetCursor, encodeKeysetCursor } from "../platform/keyset-cursor";
import { type DeviceFilters, filterConditions, likeContains } from "./listing";
import {
  DEVICE_NAME_SQL,
  type DeviceSummary,
  type DeviceSummaryRow,
  summaryColumns,
  toDeviceSummary,
} from "./rows";
import { fewSeenWithin, readSightings, seenWithinCondition, sightingsEdge } from "./sightings";

export const CONSOLE_SORTS = [
  "created_at",
  "mac_address",
  "name",
  "product_name",
  "approval_status",
  "last_seen_at",
] as const;
export type ConsoleSort = (typeof CONSOLE_SORTS)[number];

/** Sort keys, most significant first; `id` always ends the key, so the order is total. */
const SORT_KEYS: Record<ConsoleSort, { expr: string; cast: string }[]> = {
  created_at: [{ expr: "d.created_at", cast: "timestamptz" }],
  mac_address: [{ expr: "d.mac_address", cast: "text" }],
  name: [{ expr: DEVICE_NAME_SQL, cast: "text" }],
  product_name: [{ expr: "coalesce(d.product_name, '')", cast: "text" }],
  approval_status: [
    { expr: "d.approval_status", cast: "device_approval_status" },
    { expr: "d.created_at", cast: "timestamptz" },
  ],
  // Devices never seen come last in both orders (see sortKeys). Not indexed on purpose
  // (heartbeats rewrite it): read from the sightings, else a top-N sort over the filtered rows.
  last_seen_at: [{ expr: "coalesce(d.last_seen_at, '-infinity'::timestamptz)", cast: "timestamptz" }],
};

/** The sort's keys in this order (undefined for an unknown sort): oldest first, devices never seen sort as +infinity (last). */
function sortKeys(sort: ConsoleSort, order: "asc" | "desc") {
  const keys = SORT_KEYS[sort];
  if (sort !== "last_seen_at" || order === "desc") return keys;
  return [{ expr: "coalesce(d.last_seen_at, 'infinity'::timestamptz)", cast: "timestamptz" }];
}

/** The list's filters, with the online filter's one question to the sightings answered (consoleFilters). */
export interface ConsoleFilters extends DeviceFilters {
  onlineWindowSeconds: number;
  /** Online, and few devices sighted in the window: narrow to those (a superset of the online ones). */
  sightedOnly: boolean;
}

/**
 * The console's filters ready for a page and its count, which share them: with few devices online the
 * online filter narrows to the devices sighted in the window (modules/devices/sightings.ts), as it would
 * otherwise read every device row to find them. Asked once per request, not once per query.
 */
export async function consoleFilters(
  sql: Sql,
  filters: DeviceFilters & { onlineWindowSeconds: number },
): Promise<ConsoleFilters> {
  const sightedOnly =
    filters.connectivityStatus === "online" && (await fewSeenWithin(sql, filters.onlineWindowSeconds));
  return { ...filters, sightedOnly };
}

export interface ConsoleListOptions extends ConsoleFilters {
  sort: ConsoleSort;
  order: "asc" | "desc";
  limit: number;
  /** Page after this cursor (Next) or before it (Previous). */
  after?: string;
  before?: string;
}

export interface ConsoleList {
  devices: DeviceSummary[];
  /** Cursor for the next page, when there is one. */
  next: string | undefined;
  /** Cursor for the previous page, when there is one. */
  prev: string | undefined;
}

/** The WHERE conditions of the filters (shared by the page and its count). */
function filterSql(sql: Sql, options: ConsoleFilters): Fragment {
  const search = options.search?.trim();
  // device_search_text() is lower case: so is the pattern.
  const pattern = likeContains(search?.toLowerCase() ?? "");
  return sql`
    ${filterConditions(sql, options, options.onlineWindowSeconds)}
    ${options.sightedOnly ? seenWithinCondition(sql, options.onlineWindowSeconds) : sql``}
    ${
      search
        ? isUuid(search)
          ? sql`and d.id = ${search.toLowerCase()}::uuid`
          : sql`and device_search_text(d.mac_address, d.product_name, d.ipv4_address, d.metadata) like ${pattern}`
        : sql``
    }`;
}

type Fragment = PendingQuery<AnyRow[]>;
type Row = DeviceSummaryRow & { k0: string; k1: string | null };
/** A page read from the sightings also says whether it is certain to be the page (see sightingsPage). */
type SightedRow = Row & { certain: boolean; edge_reached: boolean };

/**
 * One page of devices with keyset pagination in either direction: every page, however deep, is an
 * index range scan of `limit + 1` rows. The last_seen_at sort is not indexed: its pages walk the
 * sightings in order (sightingsPage) and, when such a page is not certain, are a top-N sort over the
 * filtered rows.
 */
export async function listConsoleDevices(sql: Sql, options: ConsoleListOptions): Promise<ConsoleList> {
  const keys = sortKeys(options.sort, options.order);
  if (!keys) throw badRequest(`sort must be one of ${CONSOLE_SORTS.join(", ")}`, { field: "sort" });
  const limit = Math.max(1, Math.min(options.limit, 200));
  const backwards = options.before !== undefined && options.after === undefined;
  const cursor = options.after ?? options.before;
  const values = cursor ? decodeKeysetCursor(cursor, { keys: keys.length }) : undefined;
  if (cursor && !values) throw badRequest("The page link is not valid any more", { field: "cursor" });
  const scanOrder = (options.order === "desc") !== backwards ? "desc" : "asc";
  const op = scanOrder === "desc" ? "<" : ">";
  const orderBy = [...keys.map((k) => `${k.expr} ${scanOrder}`), `d.id ${scanOrder}`].join(", ");
  const boundSql = values
    ? keys.length === 1
      ? sql`and (${sql.unsafe(keys[0]!.expr)}, d.id) ${sql.unsafe(op)} (${values[0]!}::${sql.unsafe(keys[0]!.cast)}, ${values[1]!}::uuid)`
      : sql`and (${sql.unsafe(keys[0]!.expr)}, ${sql.unsafe(keys[1]!.expr)}, d.id) ${sql.unsafe(op)}
          (${values[0]!}::${sql.unsafe(keys[0]!.cast)}, ${values[1]!}::${sql.unsafe(keys[1]!.cast)}, ${values[2]!}::uuid)`
    : sql``;
  const filters = filterSql(sql, options);
  const columns = sql`${summaryColumns(sql, options.onlineWindowSeconds)},
      (${sql.unsafe(keys[0]!.expr)})::text as k0,
      ${keys[1] ? sql`(${sql.unsafe(keys[1].expr)})::text` : sql`null::text`} as k1`;
  const read = <R extends Row>(query: Promise<R[]>) =>
    query.catch((error: { code?: string }) => {
      // A cursor whose values do not fit this sort (a hand-edited URL): invalid, not a server error.
      if (values && typeof error.code === "string" && error.code.startsWith("22")) {
        throw badRequest("The page link is not valid any more", { field: "cursor" });
      }
      throw error;
    });
  // Previous from a device never seen may hold other devices never seen: they have no sighting.
  const sighted =
    options.sort === "last_seen_at" && (!backwards || (values && !values[0]!.endsWith("infinity")))
      ? await read(sightingsPage(sql, { scanOrder, from: values?.[0], filters, boundSql, columns, limit }))
      : undefined;
  const rows =
    sighted && sightedPageIsCertain(sighted, backwards, limit)
      ? sighted
      : // Deferred join: the page is chosen carrying only ids and sort keys, then its rows are read.
        await read(sql<Row[]>`
    with page as (
      select d.id from devices d
      where true ${filters} ${boundSql}
      order by ${sql.unsafe(orderBy)}
      limit ${limit + 1})
    select ${columns}
    from page join devices d on d.id = page.id
    order by ${sql.unsafe(orderBy)}`);
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  if (backwards) page.reverse();
  const cursorOf = (row: Row | undefined) =>
    row && encodeKeysetCursor(keys.length === 1 ? [row.k0, row.id] : [row.k0, row.k1 ?? "", row.id]);
  const first = page[0];
  const last = page[page.length - 1];
  return {
    devices: page.map(toDeviceSummary),
    next: backwards ? (values ? cursorOf(last) : undefined) : more ? cursorOf(last) : undefined,
    prev: backwards ? (more ? cursorOf(first) : undefined) : values ? cursorOf(first) : undefined,
  };
}

interface SightingsPageQuery {
  scanOrder: "asc" | "desc";
  /** The cursor's last_seen_at, when paging on from one. */
  from: string | undefined;
  filters: Fragment;
  boundSql: Fragment;
  columns: Fragment;
  limit: number;
}

/**
 * The last-seen page read from the sightings (modules/devices/sightings.ts) instead of from every
 * device row: each sighted device joined at its latest sighting (`last_seen_at = seen_at`), filtered,
 * in (seen_at, id) order. Every row also carries whether it is certain (seen strictly inside the
 * sightings read) and whether the read stopped at its limit: sightedPageIsCertain decides from them.
 */
function sightingsPage(sql: Sql, q: SightingsPageQuery) {
  const dir = sql.unsafe(q.scanOrder);
  const edge = sightingsEdge(sql, q.scanOrder, q.from);
  return sql<SightedRow[]>`
    with page as (
      select distinct r.seen_at, d.id from (${readSightings(sql, q.scanOrder, q.from)}) r
        join devices d on d.id = r.id and d.last_seen_at = r.seen_at
      where true ${q.filters} ${q.boundSql}
      order by r.seen_at ${dir}, d.id ${dir}
      limit ${q.limit + 1}),
    edge as (select ${edge} as at)
    select ${q.columns},
      coalesce(page.seen_at ${sql.unsafe(q.scanOrder === "desc" ? ">" : "<")} edge.at, true) as certain,
      edge.at is not null as edge_reached
    from page join devices d on d.id = page.id cross join edge
    order by page.seen_at ${dir}, d.id ${dir}`;
}

/**
 * Whether a page read from the sightings is the page. Next (toward the devices never seen, which
 * have no sighting and come last in both orders) it must be full and end inside what was read.
 * Previous every device between the cursor and the start has its sighting, so a short page is
 * complete when all of them were read.
 */
function sightedPageIsCertain(rows: SightedRow[], backwards: boolean, limit: number) {
  const last = rows.at(-1);
  if (!last?.certain) return false;
  return rows.length === limit + 1 || (backwards && !last.edge_reached);
}

/** Matching devices counted exactly up to this many; beyond, the list says "10,000+". */
export const MATCH_COUNT_CAP = 10_000;

/**
 * How many devices match the filters, counting no further than `cap` (`more` when there are more):
 * a broad filter over a large fleet stops after cap + 1 rows instead of reading every one.
 */
export async function countMatchingDevices(
  sql: Sql,
  options: ConsoleFilters,
  cap = MATCH_COUNT_CAP,
): Promise<{ count: number; more: boolean }> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select 1 from devices d where true ${filterSql(sql, options)} limit ${cap + 1}
    ) matching`;
  return row!.n > cap ? { count: cap, more: true } : { count: row!.n, more: false };
}

/** The newest registrations, for the dashboard. */
export async function recentDevices(sql: Sql, limit: number, onlineWindowSeconds: number) {
  const rows = await sql<DeviceSummaryRow[]>`
    select ${summaryColumns(sql, onlineWindowSeconds)}
    from devices d order by d.created_at desc, d.id desc limit ${limit}`;
  return rows.map(toDeviceSummary);
}
