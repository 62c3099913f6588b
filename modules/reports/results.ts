/**
 * A report's results: the definition plus the view (mode, bucket, range, sort, filter row, page)
 * turned into one keyset page from modules/telemetry's report query, or every page in turn for CSV.
 */
import { conflictMessage } from "../builder/service";
import { scopeDevices } from "../fleet/service";
import type { Sql } from "../platform/database";
import { badRequest } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import {
  type CompareOp,
  type ReportColumn,
  type ReportQuerySpec,
  reportColumns,
  reportPage,
} from "../telemetry/service";
import { isNumericType, type ReportOptionsCache } from "./definitions";
import {
  BUCKET_SECONDS,
  BUCKETS,
  type Bucket,
  MODES,
  RANGE_PRESETS,
  RANGE_SECONDS,
  type RangePreset,
  type Report,
  type ReportMode,
  type ReportResultsQuery,
  type ResultView,
  scopeOf,
} from "./model";
import { firstValue, type ViewParams } from "./preferences";

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

/** Operators of the detail page's filter row, by column type (reference §6.4). */
export const VIEW_OPERATORS = {
  number: [">", ">=", "=", "<=", "<"],
  time: [">", ">=", "=", "<=", "<"],
  text: ["contains", "not_contains", "is", "is_not"],
  uuid: ["is", "is_not"],
} as const;
export const OPERATOR_LABELS: Record<string, string> = {
  contains: "contains",
  not_contains: "doesn't contain",
  is: "is",
  is_not: "is not",
};

export interface AppliedView {
  mode: ReportMode;
  bucket: Bucket;
  range: { preset: RangePreset; from: string; to: string };
  sort: { by: string; direction: "asc" | "desc" } | null;
  filter: { column: string; operator: string; value: string } | null;
  limit: number;
}

export interface ResultsPage {
  fields: { path: string; alias: string }[];
  columns: ReportColumn[];
  rows: Record<string, string | number | null>[];
  view: AppliedView;
  nextCursor: string | undefined;
  /** Why a field's values are read as text: its devices disagree on its type, or none declares it now. */
  fieldNotices: string[];
}

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function encodeCursor(values: (string | number | null)[]): string {
  return Buffer.from(JSON.stringify(values)).toString("base64url");
}

function decodeCursor(cursor: string, length: number): (string | number | null)[] {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (
      Array.isArray(value) &&
      value.length === length &&
      value.every((v) => v === null || typeof v === "number" || (typeof v === "string" && v.length <= 500))
    )
      return value;
  } catch {
    // not one of ours: same answer as a malformed one
  }
  throw badRequest("The page cursor is not valid", { field: "cursor" });
}

/** How a results request is read: `onlineWindowSeconds` (Settings) for a scope's `status:` terms. */
export interface ResultOptions {
  strict: boolean;
  now?: Date;
  onlineWindowSeconds: number;
}

/**
 * Resolves the view against the report. `strict` (API, CSV): a bad parameter is a 400
 * `invalid_request` naming it. Not strict (pages, saved preferences): it falls back to the
 * default and the problem is listed, as the reference's detail page does.
 */
export async function resolveView(
  sql: Sql,
  reportOptions: ReportOptionsCache,
  report: Report,
  view: ResultView,
  { strict, now = new Date(), onlineWindowSeconds }: ResultOptions,
) {
  const problems: string[] = [];
  const reject = (field: string, message: string) => {
    if (strict) throw badRequest(message, { field });
    problems.push(message);
  };
  const config = report.config;
  let mode = config.mode;
  if (view.mode !== undefined) {
    if ((MODES as readonly string[]).includes(view.mode)) mode = view.mode;
    else reject("mode", `mode must be one of ${MODES.join(", ")}`);
  }
  let bucket = config.bucket;
  if (view.bucket !== undefined) {
    if ((BUCKETS as readonly string[]).includes(view.bucket)) bucket = view.bucket;
    else reject("bucket", `bucket must be one of ${BUCKETS.join(", ")}`);
  }
  let preset = config.range.preset;
  let fromIso = config.range.from;
  let toIso = config.range.to;
  if (view.range !== undefined) {
    if (!(RANGE_PRESETS as readonly string[]).includes(view.range))
      reject("range", `range must be one of ${RANGE_PRESETS.join(", ")}`);
    else if (view.range === "custom") {
      if (
        view.from &&
        view.to &&
        TIME.test(view.from) &&
        TIME.test(view.to) &&
        Date.parse(view.from) < Date.parse(view.to)
      ) {
        preset = "custom";
        fromIso = new Date(view.from).toISOString();
        toIso = new Date(view.to).toISOString();
      } else reject("from", "A custom range needs ISO 8601 from and to, from before to");
    } else preset = view.range;
  }
  const to = preset === "custom" && toIso ? new Date(toIso) : now;
  const from =
    preset === "custom" && fromIso
      ? new Date(fromIso)
      : new Date(now.getTime() - RANGE_SECONDS[preset as "24h"] * 1000);

  const options = await reportOptions.get(config.schema_id);
  const types = new Map(options.ok ? options.options.map((o) => [o.key, o.value_type]) : []);
  const fieldNotices: string[] = [];
  for (const f of config.fields) {
    const option = options.ok ? options.options.find((o) => o.key === f.path) : undefined;
    if (option?.conflict)
      fieldNotices.push(`${f.path}: ${conflictMessage(option)} Its values are shown as text.`);
    else if (!option)
      fieldNotices.push(
        `${f.path}: no approved device of this product declares this field now. Its recorded values are shown as text.`,
      );
  }
  const fields = config.fields.map((f) => ({
    key: f.path,
    alias: f.alias,
    numeric: isNumericType(types.get(f.path)),
  }));
  const columns = reportColumns({ fields, mode });
  const byKey = new Map(columns.map((c) => [c.key, c]));

  let sort: AppliedView["sort"] = null;
  if (view.sortBy) {
    if (byKey.has(view.sortBy))
      sort = { by: view.sortBy, direction: view.sortDir === "asc" ? "asc" : "desc" };
    else reject("sort_by", `sort_by must be one of the result columns (${[...byKey.keys()].join(", ")})`);
  }
  let filter: AppliedView["filter"] = null;
  let viewFilter: ReportQuerySpec["viewFilter"];
  const value = view.filterValue?.trim() ?? "";
  if (view.filterColumn && value !== "") {
    const column = byKey.get(view.filterColumn);
    const operators = column ? (VIEW_OPERATORS[column.type] as readonly string[]) : [];
    const operator = view.filterOperator ?? operators[0] ?? "";
    if (!column) reject("filter_column", "filter_column must be one of the result columns");
    else if (!operators.includes(operator))
      reject("filter_operator", `filter_operator for ${column.key} must be one of ${operators.join(", ")}`);
    else if (column.type === "number" && !Number.isFinite(Number(value)))
      reject("filter_value", `filter_value for ${column.key} must be a number`);
    else if (column.type === "time" && (!TIME.test(value) || Number.isNaN(Date.parse(value))))
      reject("filter_value", `filter_value for ${column.key} must be an ISO 8601 time`);
    else if (column.type === "uuid" && !isUuid(value))
      reject("filter_value", `filter_value for ${column.key} must be a device id`);
    else {
      filter = { column: column.key, operator, value };
      const op = (operator === "is" ? "=" : operator === "is_not" ? "!=" : operator) as CompareOp;
      viewFilter = { column: column.key, op, value: column.type === "number" ? Number(value) : value };
    }
  }
  let limit = DEFAULT_PAGE;
  if (view.limit !== undefined) {
    if (Number.isInteger(view.limit) && view.limit >= 1 && view.limit <= MAX_PAGE) limit = view.limit;
    else reject("limit", `limit must be a whole number from 1 to ${MAX_PAGE}`);
  }
  const spec: ReportQuerySpec = {
    fields,
    from,
    to,
    deviceScope: (await reportDevices(sql, report, onlineWindowSeconds))?.subquery,
    filters: config.filters.map((f) =>
      f.field
        ? { target: { column: f.field }, op: f.operator, value: f.value }
        : {
            target: { key: f.path!, numeric: isNumericType(types.get(f.path!)) },
            op: f.operator,
            value: f.value,
          },
    ),
    mode,
    bucketSeconds: BUCKET_SECONDS[bucket],
    viewFilter,
    sort: sort ? { column: sort.by, direction: sort.direction } : undefined,
    limit,
  };
  const applied: AppliedView = {
    mode,
    bucket,
    range: { preset, from: from.toISOString(), to: to.toISOString() },
    sort,
    filter,
    limit,
  };
  /** Length of a cursor for this view: the sort value (if any) and the tie-breaker(s). */
  const cursorLength = (sort ? 1 : 0) + (mode === "buckets" ? 2 : 1);
  return { spec, applied, columns, problems, fieldNotices, cursorLength };
}

/** The report's devices as a subquery (its scope: modules/fleet decides), or undefined for the whole fleet. */
async function reportDevices(sql: Sql, report: Report, onlineWindowSeconds: number) {
  const scope = scopeOf(report.config);
  if (scope.type === "fleet") return undefined;
  return scopeDevices(
    sql,
    {
      type: scope.type,
      product: report.config.schema_id,
      deviceIds: scope.device_ids ?? null,
      viewId: scope.view ?? null,
      query: scope.query ?? null,
    },
    onlineWindowSeconds,
  );
}

/** One page of results (`cursor` from the previous page's nextCursor). */
export async function reportResults(
  sql: Sql,
  reportOptions: ReportOptionsCache,
  report: Report,
  view: ResultView,
  options: ResultOptions,
): Promise<ResultsPage & { problems: string[] }> {
  const resolved = await resolveView(sql, reportOptions, report, view, options);
  const after = view.cursor ? decodeCursor(view.cursor, resolved.cursorLength) : undefined;
  const page = await reportPage(sql, { ...resolved.spec, after });
  return {
    fields: report.config.fields,
    columns: page.columns,
    rows: page.rows,
    view: resolved.applied,
    nextCursor: page.next ? encodeCursor(page.next) : undefined,
    fieldNotices: resolved.fieldNotices,
    problems: resolved.problems,
  };
}

/**
 * Every row of the view, a keyset batch at a time (the CSV export): at most one batch is in memory,
 * and the walk stops as soon as the consumer stops asking (a cancelled download).
 */
export async function* reportBatches(
  sql: Sql,
  reportOptions: ReportOptionsCache,
  report: Report,
  view: ResultView,
  options: { batch?: number; now?: Date; onlineWindowSeconds: number },
) {
  const resolved = await resolveView(
    sql,
    reportOptions,
    report,
    { ...view, limit: options.batch ?? MAX_PAGE },
    { ...options, strict: true },
  );
  let after: (string | number | null)[] | undefined;
  // Bounded: each pass moves the keyset strictly forward, and stops at a short page.
  for (;;) {
    const page = await reportPage(sql, { ...resolved.spec, after });
    yield { columns: page.columns, rows: page.rows };
    if (!page.next) return;
    after = page.next;
  }
}

/** The view as a stable query string (links, CSV export, saved preferences). */
export function viewQuery(view: Partial<AppliedView> & { cursor?: string }): URLSearchParams {
  const params = new URLSearchParams();
  if (view.mode) params.set("mode", view.mode);
  if (view.mode === "buckets" && view.bucket) params.set("bucket", view.bucket);
  if (view.range) {
    params.set("range", view.range.preset);
    if (view.range.preset === "custom") {
      params.set("from", view.range.from);
      params.set("to", view.range.to);
    }
  }
  if (view.sort) {
    params.set("sort_by", view.sort.by);
    params.set("sort_dir", view.sort.direction);
  }
  if (view.filter) {
    params.set("filter_column", view.filter.column);
    params.set("filter_operator", view.filter.operator);
    params.set("filter_value", view.filter.value);
  }
  if (view.cursor) params.set("cursor", view.cursor);
  return params;
}

/** ResultView from URL parameters (the names the reference uses). */
/** The view a page's parameters ask for (its query, or the viewer's saved view): each one's first value. */
export function viewFromParams(params: ViewParams): ResultView {
  return viewFromQuery(
    Object.fromEntries(Object.keys(params).map((name) => [name, firstValue(params, name)])),
  );
}

/** The view a results query asks for (the API's validated query, or a page's parameters). */
export function viewFromQuery(query: ReportResultsQuery): ResultView {
  const { limit, sort_dir } = query;
  return {
    mode: query.mode as ReportMode | undefined,
    bucket: query.bucket as Bucket | undefined,
    sortBy: query.sort_by,
    sortDir: sort_dir === "asc" || sort_dir === "desc" ? sort_dir : undefined,
    filterColumn: query.filter_column,
    filterOperator: query.filter_operator,
    filterValue: query.filter_value,
    range: query.range as RangePreset | undefined,
    from: query.from,
    to: query.to,
    cursor: query.cursor,
    limit: limit === undefined ? undefined : Number(limit),
  };
}
