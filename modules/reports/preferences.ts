/**
 * Saved view preferences (sort, filter row, mode) per viewer and view, as the reference keeps them
 * in `report_view_preferences`: the last view a viewer opened is the one they get back next time.
 */
import type { Principal } from "../platform/access";
import type { Sql } from "../platform/database";
import { formList } from "../platform/schemas";

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

/** A page's view parameters as its validated query holds them (a repeated one as a list). */
export type ViewParams = Record<string, string | string[] | undefined>;

/** The remembered parameters of a viewer's last view, or none. */
export async function loadPreferences(sql: Sql, scope: string, viewKey: string): Promise<ViewParams> {
  const [row] = await sql<{ preferences: Record<string, unknown> }[]>`
    select preferences from report_view_preferences where scope = ${scope} and view_key = ${viewKey}`;
  const params: ViewParams = {};
  for (const [name, value] of Object.entries(row?.preferences ?? {})) {
    if (!(REMEMBERED as readonly string[]).includes(name)) continue;
    const values = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === "string");
    if (values.length > 0) params[name] = values.length === 1 ? values[0] : values;
  }
  return params;
}

/** Stores the remembered parameters of `params` (an empty set clears them). */
export async function savePreferences(sql: Sql, scope: string, viewKey: string, params: ViewParams) {
  const kept: Record<string, string | string[]> = {};
  for (const name of REMEMBERED) {
    const values = formList(params[name])
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
export function hasViewParams(params: ViewParams): boolean {
  return REMEMBERED.some((name) => params[name] !== undefined) || params.reset !== undefined;
}

/** A parameter's first value (a page reads one where the URL may repeat it). */
export function firstValue(params: ViewParams, name: string): string | undefined {
  return formList(params[name])[0];
}
