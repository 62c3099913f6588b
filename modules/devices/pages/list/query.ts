// The device list's state, all of it in the URL: parsed from the query, written back into links.
import type { Static } from "@sinclair/typebox";
import type { AppContext } from "../../../platform/context";
import { AppError } from "../../../platform/errors";
import { type DeviceFilters, normaliseDeviceFilters } from "../../listing";
import type { DevicePageQuery } from "../../model";
import { CONSOLE_SORTS, type ConsoleSort } from "../../queries";

/** The list's state, all of it in the URL. */
export interface DeviceQuery {
  search?: string;
  /** A fleet query (docs/fleet.md), applied through AppContext.deviceQuery. */
  q?: string;
  /** A saved view (id or name). */
  view?: string;
  approval_status?: "pending" | "approved" | "rejected";
  connectivity_status?: "online" | "offline";
  product?: string;
  sort: ConsoleSort;
  order: "asc" | "desc";
  after?: string;
  before?: string;
}

export const FILTER_KEYS = ["approval_status", "connectivity_status", "product"] as const;
export const DEFAULT_SORT: ConsoleSort = "created_at";

/** /devices (or `path`, e.g. its CSV) with `changes` applied; paging cursors are dropped unless given. */
export function devicesUrl(
  query: DeviceQuery,
  changes: Partial<Record<keyof DeviceQuery, string | undefined>> = {},
  path = "/devices",
) {
  const merged: Record<string, string | undefined> = {
    search: query.search,
    q: query.q,
    view: query.view,
    approval_status: query.approval_status,
    connectivity_status: query.connectivity_status,
    product: query.product,
    sort: query.sort === DEFAULT_SORT ? undefined : query.sort,
    order: query.order === defaultOrder(query.sort) ? undefined : query.order,
    ...changes,
  };
  if (changes.sort !== undefined && changes.order === undefined) merged.order = undefined;
  if (merged.sort === DEFAULT_SORT) merged.sort = undefined;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(merged)) if (value) params.set(key, value);
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/** The list's query and view as one condition (AppContext.deviceQuery: the fleet query language). */
export async function queryCondition(ctx: AppContext, query: DeviceQuery, onlineWindowSeconds: number) {
  if (!query.q && !query.view) return { condition: undefined, viewName: undefined };
  if (!ctx.deviceQuery) throw new AppError(400, "invalid_query", "This server does not take queries");
  return ctx.deviceQuery({ q: query.q, view: query.view }, onlineWindowSeconds);
}

/** The list's filters as the device queries take them. */
export function listFilters(query: DeviceQuery): DeviceFilters {
  return {
    search: query.search,
    approvalStatus: query.approval_status,
    connectivityStatus: query.connectivity_status,
    product: query.product,
  };
}

export function defaultOrder(sort: ConsoleSort): "asc" | "desc" {
  return sort === "created_at" || sort === "last_seen_at" ? "desc" : "asc";
}

/** Only same-site /devices paths may be a return target. */
export function devicesReturn(value: string | undefined): string {
  return value !== undefined && /^\/devices(\?[^#\s]*)?$/.test(value) ? value : "/devices";
}

/** The list's state from its query; a value it does not know (a stale link) falls back to the default. */
export function parseDeviceQuery(query: Static<typeof DevicePageQuery>): DeviceQuery {
  const filters = normaliseDeviceFilters(query);
  const sort = (CONSOLE_SORTS as readonly string[]).includes(query.sort ?? "")
    ? (query.sort as ConsoleSort)
    : DEFAULT_SORT;
  const order = query.order === "asc" || query.order === "desc" ? query.order : defaultOrder(sort);
  const text = (v: string | undefined, max: number) =>
    v !== undefined && v.trim() !== "" ? v.trim().slice(0, max) : undefined;
  const cursor = (v: string | undefined) => (v !== undefined && /^[\w-]{1,1000}$/.test(v) ? v : undefined);
  return {
    search: filters.search,
    q: text(query.q, 1000),
    view: text(query.view, 200),
    approval_status: filters.approvalStatus,
    connectivity_status: filters.connectivityStatus,
    product: filters.product,
    sort,
    order,
    after: cursor(query.after),
    before: query.after ? undefined : cursor(query.before),
  };
}
