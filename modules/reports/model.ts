import { type Static, Type as T } from "@sinclair/typebox";

/** Limits of a report definition (the form shows them; validation enforces them). */
export const REPORT_LIMITS = { nameMax: 120, fields: 30, filters: 20, aliasMax: 80, valueMax: 200 };

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
    field: T.Optional(T.Union(FILTER_COLUMNS.map((c) => T.Literal(c)))),
    path: T.Optional(Text(300)),
    operator: T.Union([...FILTER_OPERATORS, "=="].map((o) => T.Literal(o))),
    value: T.Union([T.String({ maxLength: REPORT_LIMITS.valueMax }), T.Number()]),
  },
  { additionalProperties: false },
);

export const ReportRange = T.Object(
  {
    preset: T.Union(RANGE_PRESETS.map((p) => T.Literal(p))),
    from: T.Optional(T.String({ maxLength: 40 })),
    to: T.Optional(T.String({ maxLength: 40 })),
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
    mode: T.Optional(T.Union(MODES.map((m) => T.Literal(m)))),
    bucket: T.Optional(T.Union(BUCKETS.map((b) => T.Literal(b)))),
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
    config: report.config,
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
