/**
 * Saved view preferences (sort, filter row, mode) per viewer and view, as the reference keeps them
 * in `report_view_preferences`: the last view a viewer opened is the one they get back next time.
 */
import type { Principal } from "../platform/access";
import type { Sql } from "../platform/database";

/** Parameters a view may remember; anything else in a URL is not saved. */
export const REMEMBERED = [
  "mode",
  "bucket",
  "range",
  "from",
  "to",
  "sort_by",
  "sort_dir",
  "filter_column",
  "filter_operator",
  "filter_value",
  "name",
  "field",
] as const;

/** `operator=<id>` or `token=<id>`: whose preferences these are. */
export function preferenceScope(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === "session" ? `operator=${principal.operatorId}` : `token=${principal.tokenId}`;
}

export const listViewKey = "reports:index";
export const reportViewKey = (reportId: string) => `reports:show:${reportId}`;

export async function loadPreferences(sql: Sql, scope: string, viewKey: string): Promise<URLSearchParams> {
  const [row] = await sql<{ preferences: Record<string, string | string[]> }[]>`
    select preferences from report_view_preferences where scope = ${scope} and view_key = ${viewKey}`;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(row?.preferences ?? {})) {
    if (!(REMEMBERED as readonly string[]).includes(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) if (typeof v === "string") params.append(name, v);
  }
  return params;
}

/** Stores the remembered parameters of `params` (an empty set clears them). */
export async function savePreferences(sql: Sql, scope: string, viewKey: string, params: URLSearchParams) {
  const kept: Record<string, string | string[]> = {};
  for (const name of REMEMBERED) {
    const values = params
      .getAll(name)
      .filter((v) => v.length <= 200)
      .slice(0, 20);
    if (values.length === 1) kept[name] = values[0]!;
    else if (values.length > 1) kept[name] = values;
  }
  await sql`insert into report_view_preferences (scope, view_key, preferences)
    values (${scope}, ${viewKey}, ${JSON.stringify(kept)}::jsonb)
    on conflict (scope, view_key) do update set preferences = excluded.preferences, updated_at = now()`;
}

/** True when the URL carries any view parameter (then it wins over the saved view). */
export function hasViewParams(params: URLSearchParams): boolean {
  return REMEMBERED.some((name) => params.has(name)) || params.has("reset");
}
