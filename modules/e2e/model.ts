import { type Static, type TObject, type TSchema, Type } from "@sinclair/typebox";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { AppError } from "../platform/errors";
import { isPlainObject } from "../platform/json-body";
import { RESULT_STATUSES, type ResultStatus, type RunStatus } from "./schema";

/** E2ERun as it goes on the wire. */
export interface RunView {
  id: string;
  suite_id: string;
  journey_ids: string[];
  environment_label: string;
  trigger_source: "manual" | "ci";
  protocol_version: string;
  status: RunStatus;
  started_at: string;
  finished_at: string | null;
}

/** E2ERunResult as it goes on the wire. */
export interface ResultView {
  id: string;
  journey_id: string;
  status: ResultStatus;
  failure_step: string | null;
  failure_reason: string | null;
  log_ref: string | null;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
}

export interface RunRow {
  id: string;
  suite_id: string;
  journey_ids: string[];
  environment_label: string;
  trigger_source: "manual" | "ci";
  protocol_version: string;
  runner_id: string;
  idempotency_key: string | null;
  status: RunStatus;
  metadata: Record<string, unknown>;
  started_at: Date;
  finished_at: Date | null;
}

export interface ResultRow {
  id: string;
  run_id: string;
  journey_id: string;
  position: number;
  status: ResultStatus;
  failure_step: string | null;
  failure_reason: string | null;
  log_ref: string | null;
  started_at: Date | null;
  finished_at: Date | null;
  duration_ms: number | null;
}

const iso = (value: Date | null | undefined) => (value ? value.toISOString() : null);

export function runView(row: RunRow): RunView {
  return {
    id: row.id,
    suite_id: row.suite_id,
    journey_ids: row.journey_ids,
    environment_label: row.environment_label,
    trigger_source: row.trigger_source,
    protocol_version: row.protocol_version,
    status: row.status,
    started_at: row.started_at.toISOString(),
    finished_at: iso(row.finished_at),
  };
}

export function resultView(row: ResultRow): ResultView {
  return {
    id: row.id,
    journey_id: row.journey_id,
    status: row.status,
    failure_step: row.failure_step,
    failure_reason: row.failure_reason,
    log_ref: row.log_ref,
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    duration_ms: row.duration_ms === null ? null : Number(row.duration_ms),
  };
}

export const FINAL_RUN_STATUSES: readonly RunStatus[] = ["passed", "failed", "cancelled", "blocked"];
export const FINAL_RESULT_STATUSES: readonly ResultStatus[] = [
  "passed",
  "failed",
  "cancelled",
  "blocked",
  "skipped",
];

export function isFinalRun(status: string): boolean {
  return (FINAL_RUN_STATUSES as readonly string[]).includes(status);
}

export function isFinalResult(status: string): boolean {
  return (FINAL_RESULT_STATUSES as readonly string[]).includes(status);
}

/**
 * A run's status from its journeys: any failed → failed; else any queued/running → running;
 * else any blocked/skipped → blocked; else all cancelled → cancelled; else passed.
 */
export function aggregateRunStatus(statuses: readonly ResultStatus[]): RunStatus {
  if (statuses.includes("failed")) return "failed";
  if (statuses.some((s) => s === "queued" || s === "running")) return "running";
  if (statuses.some((s) => s === "blocked" || s === "skipped")) return "blocked";
  if (statuses.length > 0 && statuses.every((s) => s === "cancelled")) return "cancelled";
  return "passed";
}

/** drizzle hands postgres.js timestamps through as text ("2026-01-02 03:04:05.678+00"): make Dates. */
export function toDate(value: Date | string | null | undefined): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  return new Date(value.replace(" ", "T").replace(/([+-]\d{2})$/, "$1:00"));
}

export function runRow<T extends RunRow>(raw: T): T {
  return { ...raw, started_at: toDate(raw.started_at)!, finished_at: toDate(raw.finished_at) };
}

export function resultRow(raw: ResultRow): ResultRow {
  return { ...raw, started_at: toDate(raw.started_at), finished_at: toDate(raw.finished_at) };
}

// ---------------------------------------------------------------- request bodies

/**
 * Each property schema carries the `message` shown when its value is wrong (after the field name),
 * and `tooLong` when exceeding a size limit deserves its own words.
 */
const text = (max: number) =>
  Type.String({
    pattern: "\\S",
    maxLength: max,
    message: "must be a non-empty string.",
    tooLong: "is too long.",
  });
const optionalText = () =>
  Type.Optional(Type.Union([Type.String(), Type.Null()], { message: "must be a string or null." }));

export const CreateRunBodySchema = Type.Object(
  {
    suite_id: text(200),
    environment_label: text(200),
    trigger_source: Type.Union([Type.Literal("manual"), Type.Literal("ci")], {
      message: "must be manual or ci.",
    }),
    journey_ids: Type.Optional(
      Type.Array(Type.String({ pattern: "\\S" }), {
        maxItems: 500,
        message: "must be a list of journey ids.",
        tooLong: "lists too many journeys.",
      }),
    ),
    idempotency_key: Type.Optional(
      Type.Union([Type.String({ maxLength: 255 }), Type.Null()], {
        message: "must be a string or null.",
        tooLong: "must be at most 255 characters.",
      }),
    ),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { message: "must be an object." })),
  },
  { additionalProperties: false },
);
/** The create body as sent; createRun trims the texts and defaults the optional fields. */
export type CreateRunBody = Static<typeof CreateRunBodySchema>;

export const ResultSubmitSchema = Type.Object(
  {
    journey_id: Type.String({ pattern: "\\S", message: "must be a non-empty journey id." }),
    status: Type.Union(
      RESULT_STATUSES.map((status) => Type.Literal(status)),
      { message: `must be one of ${RESULT_STATUSES.join(", ")}.` },
    ),
    failure_step: optionalText(),
    failure_reason: optionalText(),
    log_ref: optionalText(),
    duration_ms: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { message: "must be a non-negative integer." }),
    ),
  },
  { additionalProperties: false },
);
export type ResultSubmit = Static<typeof ResultSubmitSchema>;

export const LEGACY_CREATE_FIELDS = ["client_version", "server_version"] as const;
const MAX_METADATA_BYTES = 16 * 1024;
const MAX_RESULTS = 1000;

export interface FieldError {
  field: string;
  message: string;
}

export const invalidRequest = (message: string, details?: unknown) =>
  new AppError(400, "invalid_request", message, details);

const SIZE_ERRORS = [ValueErrorType.StringMaxLength, ValueErrorType.ArrayMaxItems];

/** A size limit broken, also inside a union (`string | null` reports only that no member matched). */
function isSizeError(error: ValueError): boolean {
  if (SIZE_ERRORS.includes(error.type)) return true;
  return error.errors.some((member) => [...member].some(isSizeError));
}

/**
 * A value's problems against an object schema, at most one per property, in the schema's property
 * order after the unknown properties; `prefix` names where the object sits ("results[0].").
 */
function objectErrors(schema: TObject, value: Record<string, unknown>, prefix = ""): FieldError[] {
  const byField = new Map<string, FieldError>();
  for (const error of Value.Errors(schema, value)) {
    const key = error.path.split("/")[1] ?? "";
    if (byField.has(key)) continue;
    const field = `${prefix}${key}`;
    const property = schema.properties[key] as (TSchema & { message?: string; tooLong?: string }) | undefined;
    let message: string;
    if (error.type === ValueErrorType.ObjectAdditionalProperties || !property) {
      message = `${field} is not a known property.`;
    } else if (
      error.type === ValueErrorType.ObjectRequiredProperty ||
      (value[key] === null && schema.required?.includes(key))
    ) {
      message = `${field} is required.`;
    } else if (property.tooLong && isSizeError(error)) {
      message = `${field} ${property.tooLong}`;
    } else {
      message = `${field} ${property.message ?? "is invalid."}`;
    }
    byField.set(key, { field, message });
  }
  const known = Object.keys(schema.properties);
  const rank = (error: FieldError) => known.indexOf(error.field.slice(prefix.length));
  return [...byField.values()].sort((a, b) => rank(a) - rank(b));
}

/**
 * Every problem of a create body, listed legacy fields first, then unknown properties, then the
 * fields in schema order. createRun reports them stage by stage (legacy, environment, then the
 * rest after the protocol header), the order of concern the spec gives.
 */
export function createBodyErrors(body: unknown): { body: Record<string, unknown>; errors: FieldError[] } {
  if (!isPlainObject(body))
    throw invalidRequest("The request body must be a JSON object.", { field: null, errors: [] });
  const errors = objectErrors(CreateRunBodySchema, body).map((error) =>
    (LEGACY_CREATE_FIELDS as readonly string[]).includes(error.field)
      ? {
          field: error.field,
          message: `${error.field} is a legacy field and is not accepted; send the X-E2E-Protocol-Version header.`,
        }
      : error,
  );
  if (
    !errors.some((e) => e.field === "metadata") &&
    body.metadata !== undefined &&
    Buffer.byteLength(JSON.stringify(body.metadata)) > MAX_METADATA_BYTES
  ) {
    errors.push({
      field: "metadata",
      message: `metadata must be at most ${MAX_METADATA_BYTES} bytes of JSON.`,
    });
  }
  const legacy = (e: FieldError) => (LEGACY_CREATE_FIELDS as readonly string[]).includes(e.field);
  return { body, errors: [...errors.filter(legacy), ...errors.filter((e) => !legacy(e))] };
}

/** Throws 400 naming the first of `errors` that `stage` selects (details list them all). */
export function failStage(errors: FieldError[], stage: (error: FieldError) => boolean): void {
  const first = errors.find(stage);
  if (first) throw invalidRequest(first.message, { field: first.field, errors });
}

/** POST /e2e/runs/{id}/results body: 1–1000 results, known fields only, each journey once. */
export function parseResultsBody(body: unknown): ResultSubmit[] {
  if (!isPlainObject(body) || body.results === undefined || body.results === null)
    throw invalidRequest("Results payload is required.", { field: "results" });
  if (!Array.isArray(body.results)) throw invalidRequest("results must be a list.", { field: "results" });
  if (body.results.length === 0)
    throw invalidRequest("Results payload cannot be empty.", { field: "results" });
  if (body.results.length > MAX_RESULTS)
    throw invalidRequest(`At most ${MAX_RESULTS} results per request.`, { field: "results" });
  const extra = Object.keys(body).find((k) => k !== "results");
  if (extra) throw invalidRequest(`${extra} is not a known property.`, { field: extra });
  const seen = new Set<string>();
  return body.results.map((item: unknown, index: number) => {
    const at = `results[${index}]`;
    if (!isPlainObject(item)) throw invalidRequest(`${at} must be an object.`, { field: at });
    failStage(objectErrors(ResultSubmitSchema, item, `${at}.`), () => true);
    const result = item as ResultSubmit;
    const journeyId = result.journey_id.trim();
    if (seen.has(journeyId))
      throw invalidRequest(`Journey '${journeyId}' appears more than once.`, { field: `${at}.journey_id` });
    seen.add(journeyId);
    return { ...result, journey_id: journeyId };
  });
}

// ---------------------------------------------------------------- GET /e2e/runs query

export interface RunFilters {
  status?: string;
  suite_id?: string;
  environment_label?: string;
  trigger_source?: string;
  limit?: number;
}

const FILTER_LIMITS = { status: 50, suite_id: 200, environment_label: 200, trigger_source: 50 } as const;

/** GET /e2e/runs query: optional string filters and `limit` (an integer 1–500, default 50). */
export function parseRunFilters(params: URLSearchParams): RunFilters {
  const filters: RunFilters = {};
  for (const [field, max] of Object.entries(FILTER_LIMITS) as [keyof typeof FILTER_LIMITS, number][]) {
    const values = params.getAll(field);
    if (values.length === 0) continue;
    if (values.length > 1 || values[0]!.length > max) {
      throw invalidRequest(`${field} must be one value of at most ${max} characters.`, {
        field,
      });
    }
    filters[field] = values[0]!;
  }
  const limits = params.getAll("limit");
  if (limits.length > 0) {
    const limit = limits.length === 1 && /^\d{1,3}$/.test(limits[0]!.trim()) ? Number(limits[0]) : Number.NaN;
    if (!(limit >= 1 && limit <= 500))
      throw invalidRequest("limit must be an integer from 1 to 500.", {
        field: "limit",
      });
    filters.limit = limit;
  }
  return filters;
}
