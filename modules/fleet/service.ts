/**
 * What the fleet feature offers other features and its routes: tags, saved views, and the query
 * language that finds devices (docs/fleet.md). Logic lives in the files named below.
 */
import { type DeviceCondition, matchingDevices } from "../devices/service";
import type { Database } from "../platform/database";
import { compileQuery } from "./query/compile";
import type { Query } from "./query/parse";
import { checkedQuery, getView, type SavedView } from "./views";

// The device page's "Tags & notes" tab (modules/console/device-detail/tabs.ts).
export { FleetPanel, type FleetTabData, loadFleetTab } from "./device-tab";
export { compileQuery } from "./query/compile";
export { parseQuery, QUERY_MAX_LENGTH, type Query, QueryError } from "./query/parse";
export {
  addTags,
  deviceTagsOf,
  removeTags,
  setProfile,
  syncDeclaredLabels,
  TAG_BATCH_MAX,
  type Tag,
  tagFromText,
  tagSuggestions,
} from "./tags";
export {
  checkedQuery,
  createView,
  deleteView,
  findView,
  getView,
  listViews,
  type SavedView,
  updateView,
} from "./views";

export interface DeviceMatch {
  /** The condition over `devices d` (undefined: no query, every device). */
  condition: DeviceCondition | undefined;
  /** The saved view applied, if any. */
  view: SavedView | undefined;
}

/**
 * `?q=` and `?view=` (id or name) as one condition: both given, a device matches both. Throws 400
 * invalid_query (position, length) for a query that does not parse, 404 view_not_found.
 */
export async function deviceMatch(
  database: Database,
  input: { q?: string; view?: string },
  options: { onlineWindowSeconds: number },
): Promise<DeviceMatch> {
  const view = input.view?.trim() ? await getView(database, input.view) : undefined;
  const typed = input.q?.trim() ? checkedQuery(input.q) : undefined;
  // A stored view's query parsed when it was saved; a language change that refuses it now reports it.
  const saved = view ? checkedQuery(view.query, "view") : undefined;
  const terms: Query["terms"] = [...(saved?.terms ?? []), ...(typed?.terms ?? [])];
  if (terms.length === 0) return { condition: undefined, view };
  return { condition: compileQuery(database.sql, { terms }, options), view };
}

/**
 * The devices a query and/or view matches now, with their names, at most `limit` (one more tells the
 * caller there are more): the members a rollout snapshots when it is created.
 */
export async function deviceMembers(
  database: Database,
  input: { q?: string; view?: string },
  options: { onlineWindowSeconds: number },
  limit: number,
): Promise<{ id: string; name: string }[]> {
  const { condition } = await deviceMatch(database, input, options);
  return matchingDevices(database.sql, condition, limit);
}
