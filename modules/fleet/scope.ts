/**
 * The devices an alert rule or a report is about (docs/fleet.md, _Scopes_): the whole fleet, a
 * product, a list of devices, a saved view or a fleet query. A view scope stores the view's id and
 * follows the view (a dynamic group: whoever matches its query now, also after the query changes); a
 * query scope stores the query text, checked when saved. Membership is decided in SQL, for many
 * scopes and many devices in one statement (alert evaluation asks once per batch of telemetry).
 */

import { type DeviceCondition, devicesOfProduct } from "../devices/service";
import type { Sql } from "../platform/database";
import { isUuid } from "../platform/json-body";
import { compileQuery } from "./query/compile";
import { parseQuery, QueryError } from "./query/parse";

export const SCOPE_TYPES = ["fleet", "product", "devices", "view", "query"] as const;
export type ScopeType = (typeof SCOPE_TYPES)[number];

export const SCOPE_LABELS: Record<ScopeType, string> = {
  fleet: "Whole fleet",
  product: "Every device of the product",
  devices: "These devices",
  view: "A saved view",
  query: "A fleet query",
};

/** A stored scope. `product` is its owner's product (a rule's product_name, a report's schema_id). */
export interface DeviceScope {
  type: ScopeType;
  product?: string | null;
  deviceIds?: string[] | null;
  viewId?: string | null;
  query?: string | null;
}

/** What a form or an API call sends: the view by id or name. */
export interface ScopeInput {
  type?: unknown;
  deviceIds?: string[] | null;
  view?: unknown;
  query?: unknown;
}

/** A field's problem: the message, and for a query the bad token's place (as the device list shows it). */
export interface ScopeProblem {
  field: "scope_type" | "scope_view" | "scope_query";
  message: string;
  position?: number;
  length?: number;
}

export const SCOPE_MESSAGES = {
  type: `Choose the scope: ${SCOPE_TYPES.join(", ")}.`,
  view: "Choose a saved view.",
  query: "Enter a fleet query, e.g. tag:site=berlin status:online.",
} as const;

/** The scope in a few words, for lists and pages (`viewName`: the view's name now). */
export function describeScope(scope: DeviceScope, viewName?: string | null): string {
  switch (scope.type) {
    case "fleet":
      return "Whole fleet";
    case "product":
      return scope.product ? `Every device of ${scope.product}` : "Whole fleet";
    case "devices":
      return `${scope.deviceIds?.length ?? 0} device(s)`;
    case "view":
      return viewName ? `View "${viewName}"` : "A deleted view";
    case "query":
      return `Query: ${scope.query ?? ""}`;
  }
}

/** A view's id and name by id or name (case-insensitive), or undefined. */
async function viewByIdOrName(sql: Sql, idOrName: string) {
  const lower = idOrName.toLowerCase();
  const [row] = await sql<{ id: string; name: string }[]>`select id, name from saved_views
    where ${isUuid(idOrName) ? sql`id = ${lower}::uuid` : sql`lower(name) = ${lower}`}`;
  return row;
}

/**
 * Checks a scope before it is stored: the type, the view (it must exist: stored by id), the query (it
 * must parse). `devices` and `product` are checked by their owners (a rule's device list, a report's
 * product). Returns the scope to store, or the problem.
 */
export async function checkScope(
  sql: Sql,
  input: ScopeInput,
): Promise<{ scope: Omit<DeviceScope, "product"> } | { problem: ScopeProblem }> {
  const type = SCOPE_TYPES.find((t) => t === (typeof input.type === "string" ? input.type.trim() : ""));
  if (!type) return { problem: { field: "scope_type", message: SCOPE_MESSAGES.type } };
  if (type === "view") {
    const given = typeof input.view === "string" ? input.view.trim() : "";
    if (given === "" || given.length > 200)
      return { problem: { field: "scope_view", message: SCOPE_MESSAGES.view } };
    const view = await viewByIdOrName(sql, given);
    if (!view) return { problem: { field: "scope_view", message: `No saved view "${given}".` } };
    return { scope: { type, viewId: view.id } };
  }
  if (type === "query") {
    const query = typeof input.query === "string" ? input.query.trim() : "";
    if (query === "") return { problem: { field: "scope_query", message: SCOPE_MESSAGES.query } };
    try {
      parseQuery(query);
    } catch (error) {
      if (!(error instanceof QueryError)) throw error;
      return {
        problem: {
          field: "scope_query",
          message: `${error.message} (at character ${error.position + 1})`,
          position: error.position,
          length: error.length,
        },
      };
    }
    return { scope: { type, query } };
  }
  return { scope: { type, deviceIds: type === "devices" ? (input.deviceIds ?? []) : null } };
}

/** Where a query fails to parse (a form shows the caret under it, as the device list does), or undefined. */
export function queryProblem(text: string): { message: string; position: number } | undefined {
  try {
    parseQuery(text.trim());
    return undefined;
  } catch (error) {
    if (error instanceof QueryError) return { message: error.message, position: error.position };
    throw error;
  }
}

/** The stored queries of these views, by id (a view deleted meanwhile is missing: its scope matches nothing). */
async function viewQueries(sql: Sql, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<{ id: string; query: string }[]>`
    select id, query from saved_views where id = any(${ids}::uuid[])`;
  return new Map(rows.map((r) => [r.id, r.query]));
}

/** View names by id (pages and the API show a view scope by its name). */
export async function viewNames(sql: Sql, ids: string[]): Promise<Map<string, string>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return new Map();
  const rows = await sql<{ id: string; name: string }[]>`
    select id, name from saved_views where id = any(${unique}::uuid[])`;
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** A query's condition; a stored text that no longer parses (a language change) matches nothing. */
function queryCondition(sql: Sql, text: string, onlineWindowSeconds: number): DeviceCondition {
  try {
    return compileQuery(sql, parseQuery(text), { onlineWindowSeconds });
  } catch (error) {
    if (error instanceof QueryError) return sql`false`;
    throw error;
  }
}

/** The scope as a condition over `devices d` (views' queries given by `queries`). */
function scopeCondition(
  sql: Sql,
  scope: DeviceScope,
  queries: Map<string, string>,
  onlineWindowSeconds: number,
): DeviceCondition {
  switch (scope.type) {
    case "fleet":
      return sql`true`;
    case "product":
      return scope.product ? sql`d.id in (${devicesOfProduct(sql, scope.product)})` : sql`true`;
    case "devices":
      return sql`d.id = any(${scope.deviceIds ?? []}::uuid[])`;
    case "view": {
      const text = scope.viewId ? queries.get(scope.viewId) : undefined;
      return text === undefined ? sql`false` : queryCondition(sql, text, onlineWindowSeconds);
    }
    case "query":
      return queryCondition(sql, scope.query ?? "", onlineWindowSeconds);
  }
}

/**
 * The scope's devices as a `select d.id from devices d …` subquery, for another feature's statement
 * (a report's telemetry is limited with it). Wrapped: an async function returning the fragment itself
 * would run it (a pending query is a thenable).
 */
export async function scopeDevices(
  sql: Sql,
  scope: DeviceScope,
  onlineWindowSeconds: number,
): Promise<{ subquery: DeviceCondition }> {
  // A product's subquery as before scopes (its plan is the one bench/reports measured).
  if (scope.type === "product" && scope.product) return { subquery: devicesOfProduct(sql, scope.product) };
  const queries = await viewQueries(sql, scope.type === "view" && scope.viewId ? [scope.viewId] : []);
  return {
    subquery: sql`select d.id from devices d where ${scopeCondition(sql, scope, queries, onlineWindowSeconds)}`,
  };
}

/**
 * Which of `deviceIds` each scope holds now, in one statement however many scopes (the views' queries
 * in one more): the answer's i-th set is `scopes[i]`'s members among those devices.
 */
export async function scopeMembers(
  sql: Sql,
  scopes: DeviceScope[],
  deviceIds: string[],
  onlineWindowSeconds: number,
): Promise<Set<string>[]> {
  const members = scopes.map(() => new Set<string>());
  if (scopes.length === 0 || deviceIds.length === 0) return members;
  const queries = await viewQueries(
    sql,
    scopes.flatMap((s) => (s.type === "view" && s.viewId ? [s.viewId] : [])),
  );
  const parts = scopes.map(
    (scope, i) =>
      sql`select ${i}::int as n, d.id from devices d
        where d.id = any(${deviceIds}::uuid[]) and (${scopeCondition(sql, scope, queries, onlineWindowSeconds)})`,
  );
  const union = parts.slice(1).reduce((all, part) => sql`${all} union all ${part}`, parts[0]!);
  for (const row of await sql<{ n: number; id: string }[]>`${union}`) members[row.n]!.add(row.id);
  return members;
}
