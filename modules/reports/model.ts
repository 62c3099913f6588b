import { type Static, Type as T } from "@sinclair/typebox";
import { SCOPE_TYPES, type ScopeType } from "../fleet/service";
import { allDocument, changeDocument, oneDocument, writeDocument } from "../jsonapi/model";
import { ButtonForm, ConsoleForm, FormList, FormText, literalUnion, QUIET } from "../platform/schemas";

/** Limits of a report definition (the form shows them; validation enforces them). */
export const REPORT_LIMITS = {
  nameMax: 120,
  fields: 30,
  filters: 20,
  aliasMax: 80,
  valueMax: 200,
  devices: 500,
  queryMax: 1000,
};

export const RANGE_PRESETS = ["1h", "24h", "7d", "30d", "custom"] as const;
export const RANGE_SECONDS: Record<Exclude<RangePreset, "custom">, number> = {
  "1h": 3600,
  "24h": 86_400,
  "7d": 7 * 86_400,
  "30d": 30 * 86_400,
};
export const MODES = ["raw", "per_device", "buckets"] as const;
export const BUCKETS = ["5m", "1h", "1d"] as const;
export const BUCKET_SECONDS: Record<Bucket, number> = { "5m": 300, "1h": 3600, "1d": 86_400 };
/** Operators of definition filters; `==` is accepted as `=` (the reference's spelling). */
export const FILTER_OPERATORS = ["=", "!=", ">", ">=", "<", "<=", "contains", "not_contains"] as const;
export const NUMBER_OPERATORS = ["=", "!=", ">", ">=", "<", "<="] as const;
export const TEXT_OPERATORS = ["=", "!=", "contains", "not_contains"] as const;
/** Telemetry columns a filter may name instead of a payload path. */
export const FILTER_COLUMNS = ["device_id", "recorded_at"] as const;
/** Output columns every mode adds; aliases may not take these names. */
export const RESERVED_ALIASES = ["device_id", "recorded_at", "bucket", "events", "last_seen"];

export type RangePreset = (typeof RANGE_PRESETS)[number];
export type ReportMode = (typeof MODES)[number];
export type Bucket = (typeof BUCKETS)[number];
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

const Text = (max: number) => T.String({ maxLength: max });

export const ReportField = T.Object(
  { path: Text(300), alias: T.Optional(Text(REPORT_LIMITS.aliasMax)) },
  { additionalProperties: false },
);

export const ReportFilter = T.Object(
  {
    field: T.Optional(literalUnion(FILTER_COLUMNS)),
    path: T.Optional(Text(300)),
    operator: literalUnion([...FILTER_OPERATORS, "=="] as const),
    value: T.Union([T.String({ maxLength: REPORT_LIMITS.valueMax }), T.Number()]),
  },
  { additionalProperties: false },
);

export const ReportRange = T.Object(
  {
    preset: literalUnion(RANGE_PRESETS),
    from: T.Optional(T.String({ maxLength: 40 })),
    to: T.Optional(T.String({ maxLength: 40 })),
  },
  { additionalProperties: false },
);

/**
 * Which devices' telemetry a report reads (modules/fleet/scope.ts). Absent: `product` with a
 * schema_id, else `fleet` (as before scopes). `view` takes a saved view's id or name and is stored
 * by id: the report follows the view's members as they change.
 */
export const ReportScope = T.Object(
  {
    type: literalUnion(SCOPE_TYPES),
    device_ids: T.Optional(T.Array(T.String({ maxLength: 36 }), { maxItems: REPORT_LIMITS.devices })),
    view: T.Optional(
      T.String({ maxLength: 200, description: "A view scope's saved view: id or name (stored as the id)" }),
    ),
    query: T.Optional(
      T.String({ maxLength: REPORT_LIMITS.queryMax, description: "A query scope's fleet query" }),
    ),
  },
  { additionalProperties: false },
);

/** The stored definition (`custom_reports.config`), also the API's `config`. */
export const ReportConfigSchema = T.Object(
  {
    source: T.Optional(T.Literal("telemetry")),
    /** Builder schema id (product); null or absent: every product. */
    schema_id: T.Optional(T.Union([Text(200), T.Null()])),
    /** Accepted from older clients and ignored: a report is about its product's fields, not a schema version. */
    schema_version: T.Optional(T.Union([Text(100), T.Null()])),
    fields: T.Array(ReportField, { minItems: 1, maxItems: REPORT_LIMITS.fields }),
    filters: T.Optional(T.Array(ReportFilter, { maxItems: REPORT_LIMITS.filters })),
    range: T.Optional(ReportRange),
    mode: T.Optional(literalUnion(MODES)),
    bucket: T.Optional(literalUnion(BUCKETS)),
    scope: T.Optional(ReportScope),
  },
  { additionalProperties: false },
);

export const ReportInputSchema = T.Object(
  { name: Text(REPORT_LIMITS.nameMax), config: ReportConfigSchema },
  { additionalProperties: false },
);

export type ReportInput = Static<typeof ReportInputSchema>;

/** A definition after validation: every optional part filled in, aliases resolved. */
export interface ReportConfig {
  source: "telemetry";
  schema_id: string | null;
  fields: { path: string; alias: string }[];
  filters: {
    field?: (typeof FILTER_COLUMNS)[number];
    path?: string;
    operator: FilterOperator;
    value: string | number;
  }[];
  range: { preset: RangePreset; from?: string; to?: string };
  mode: ReportMode;
  bucket: Bucket;
  /** Absent in definitions saved before scopes: see `scopeOf`. */
  scope?: { type: ScopeType; device_ids?: string[]; view?: string; query?: string };
}

/** A definition's scope; one saved before scopes reads its product, or the whole fleet without one. */
export function scopeOf(config: ReportConfig): NonNullable<ReportConfig["scope"]> {
  return config.scope ?? { type: config.schema_id ? "product" : "fleet" };
}

export interface Report {
  id: string;
  name: string;
  config: ReportConfig;
  createdAt: Date;
  updatedAt: Date;
}

/** What an edit of a report changes (the audit log compares it before and after). */
export const auditedReport = (report: Report): Record<string, unknown> => ({
  name: report.name,
  config: report.config,
});

/** The wire shape of a report (`/api/v1/reports`, JSON:API attributes). */
export function reportJson(report: Report) {
  return {
    id: report.id,
    name: report.name,
    config: { ...report.config, scope: scopeOf(report.config) },
    inserted_at: report.createdAt.toISOString(),
    updated_at: report.updatedAt.toISOString(),
  };
}

/** View parameters of a results request (detail page, results API, CSV). */
export interface ResultView {
  mode?: ReportMode;
  bucket?: Bucket;
  sortBy?: string;
  sortDir?: "asc" | "desc";
  filterColumn?: string;
  filterOperator?: string;
  filterValue?: string;
  range?: RangePreset;
  from?: string;
  to?: string;
  cursor?: string;
  limit?: number;
}

// ---------------------------------------------------------------- the reports API's schemas

/** A definition of the wrong shape: 422 like the checks after it, every wrong field named. */
const invalidReport = {
  status: 422,
  code: "invalid_report",
  message: "Unable to save report",
  errorMap: true,
};

/** `POST` and `PATCH /api/v1/reports…` (PATCH replaces the definition); a wrong shape is 422 invalid_report. */
export const ReportBody = T.Composite([ReportInputSchema], {
  ...QUIET,
  additionalProperties: false,
  refusal: invalidReport,
  examples: [
    {
      name: "Fleet memory",
      config: {
        schema_id: "edge-gateway",
        fields: [{ path: "memory.used_percent", alias: "memory" }],
        range: { preset: "24h" },
      },
    },
  ],
});

export const ReportParams = T.Object({ id: T.String({ description: "The report's id (UUID)" }) });

/** `GET /api/v1/reports`: by name, by the fields a report contains, ordered by name. */
export const ReportListQuery = T.Object(
  {
    name: T.Optional(T.String({ maxLength: 200, description: "Part of the name, any case" })),
    field: T.Optional(
      T.Union([T.String({ maxLength: 300 }), T.Array(T.String({ maxLength: 300 }), { maxItems: 20 })], {
        description: "A field path every report listed contains (repeat for more)",
      }),
    ),
    sort_dir: T.Optional(T.Union([T.Literal("asc"), T.Literal("desc")], { message: "must be asc or desc" })),
  },
  { additionalProperties: true },
);

const view = (description: string) => T.Optional(T.String({ description }));

/** `GET /api/v1/reports/:id/results`: the view (each checked against the report: 400 naming it). */
export const ReportResultsQuery = T.Object(
  {
    mode: view(`One of ${MODES.join(", ")} (default: the report's)`),
    bucket: view(`One of ${BUCKETS.join(", ")}, for buckets mode`),
    range: view(`One of ${RANGE_PRESETS.join(", ")}`),
    from: view("ISO 8601, for the custom range"),
    to: view("ISO 8601, for the custom range"),
    sort_by: view("An output column"),
    sort_dir: view("asc or desc"),
    filter_column: view("An output column to filter on"),
    filter_operator: view("An operator the column's type allows"),
    filter_value: view("The value compared"),
    limit: view("Rows per page, 1 to 1000 (default 100)"),
    cursor: view("`meta.next_cursor` of the page before"),
    format: T.Optional(T.Literal("csv", { description: "Every row as CSV (text/csv) instead of a page" })),
  },
  { additionalProperties: true },
);
export type ReportResultsQuery = Static<typeof ReportResultsQuery>;

/** `GET /reports/:id`: a results view, or `reset` (the report's own view, forgetting the saved one). */
export const ReportPageQuery = T.Object(
  { ...ReportResultsQuery.properties, reset: view("Any value: show the report's own view") },
  { additionalProperties: true },
);

/** `GET /reports`: the list's name filter, its field filters (repeated) and its order. */
export const ReportListPageQuery = T.Object(
  {
    name: T.Optional(FormText(200)),
    field: T.Optional(FormList(200, 50)),
    sort_dir: T.Optional(FormText(4)),
    reset: view("Any value: forget the saved list view"),
  },
  { additionalProperties: true },
);

const StoredConfig = T.Object({
  source: T.Literal("telemetry"),
  schema_id: T.Union([T.String(), T.Null()]),
  fields: T.Array(T.Object({ path: T.String(), alias: T.String() })),
  filters: T.Array(
    T.Object({
      field: T.Optional(literalUnion(FILTER_COLUMNS)),
      path: T.Optional(T.String()),
      operator: literalUnion(FILTER_OPERATORS),
      value: T.Union([T.String(), T.Number()]),
    }),
  ),
  range: T.Object({
    preset: literalUnion(RANGE_PRESETS),
    from: T.Optional(T.String()),
    to: T.Optional(T.String()),
  }),
  mode: literalUnion(MODES),
  bucket: literalUnion(BUCKETS),
  scope: ReportScope,
});

const Time = T.String({ format: "date-time" });

/** A report on the wire (`reportJson`). */
export const ReportJsonSchema = T.Object({
  id: T.String({ format: "uuid" }),
  name: T.String(),
  config: StoredConfig,
  inserted_at: Time,
  updated_at: Time,
});

export const ReportReply = T.Object({ data: ReportJsonSchema });
export const ReportListReply = T.Object({ data: T.Array(ReportJsonSchema) });

const Cell = T.Union([T.String(), T.Number(), T.Null()]);

/** `GET /api/v1/reports/:id/results` → 200: a page of rows and the view applied. */
export const ReportResultsReply = T.Object({
  data: T.Object({
    fields: T.Array(T.Object({ path: T.String(), alias: T.String() })),
    rows: T.Array(T.Record(T.String(), Cell)),
  }),
  meta: T.Object({
    report_id: T.String({ format: "uuid" }),
    mode: literalUnion(MODES),
    bucket: T.Union([literalUnion(BUCKETS), T.Null()]),
    range: T.Object({ preset: literalUnion(RANGE_PRESETS), from: T.String(), to: T.String() }),
    filters: StoredConfig.properties.filters,
    view_filter: T.Union([
      T.Object({ column: T.String(), operator: T.String(), value: T.String() }),
      T.Null(),
    ]),
    sort: T.Object({
      by: T.Union([T.String(), T.Null()]),
      direction: T.Union([T.Literal("asc"), T.Literal("desc")]),
    }),
    columns: T.Array(
      T.Object({
        key: T.String(),
        type: T.Union([T.Literal("number"), T.Literal("text"), T.Literal("time"), T.Literal("uuid")]),
      }),
    ),
    row_count: T.Integer(),
    limit: T.Integer(),
    next_cursor: T.Union([T.String(), T.Null()]),
  }),
});

/** JSON:API `custom_report` (`/api/json/custom_reports`): the same fields as attributes, no links. */
const CustomReportResource = T.Object({
  type: T.Literal("custom_report"),
  id: T.String({ format: "uuid" }),
  attributes: T.Omit(ReportJsonSchema, ["id"]),
});
export const CustomReportDocument = oneDocument(CustomReportResource);
export const CustomReportListDocument = allDocument(CustomReportResource);

/** `POST /api/json/custom_reports`: the definition as attributes. */
export const CustomReportCreateDocument = changeDocument(
  "custom_report",
  T.Object(ReportInputSchema.properties, { additionalProperties: false, refusal: invalidReport }),
  { typeOptional: true },
);

/** `PATCH /api/json/custom_reports/:id`: the attributes sent replace theirs; the rest stay. */
export const CustomReportUpdateDocument = writeDocument(
  "custom_report",
  T.Partial(T.Object(ReportInputSchema.properties), { additionalProperties: false, refusal: invalidReport }),
  { typeOptional: true },
);

/** The report form's rows: at most this many field rows and filter rows are read from a post. */
export const REPORT_FORM_ROWS = 60;

type RowName =
  `${"field_path" | "field_alias" | "filter_target" | "filter_operator" | "filter_value"}_${number}`;
const rowText = T.Optional(FormText(1000));
const rows = Object.fromEntries(
  ["field_path", "field_alias", "filter_target", "filter_operator", "filter_value"].flatMap((name) =>
    Array.from({ length: REPORT_FORM_ROWS }, (_, i) => [`${name}_${i}`, rowText]),
  ),
) as Record<RowName, typeof rowText>;

/**
 * The report form (create, edit): its name, product, numbered field and filter rows, range and mode.
 * `reload` (the "Load this schema's fields" button) shows the chosen schema's options, saving nothing.
 */
export const ReportForm = ConsoleForm({
  name: T.Optional(FormText(1000)),
  schema: T.Optional(FormText(1000)),
  range: T.Optional(FormText(20)),
  from: T.Optional(FormText(100)),
  to: T.Optional(FormText(100)),
  mode: T.Optional(FormText(20)),
  bucket: T.Optional(FormText(20)),
  scope_type: T.Optional(FormText(20)),
  device_ids: T.Optional(FormText(100_000)),
  scope_view: T.Optional(FormText(1000)),
  scope_query: T.Optional(FormText(2000)),
  reload: T.Optional(FormText(10)),
  ...rows,
});
/** Static drops the rows' template-literal keys: they are added back. */
export type ReportForm = Static<typeof ReportForm> & Partial<Record<RowName, string>>;

/** Delete a report: a button. */
export const ReportButtonForm = ButtonForm;
