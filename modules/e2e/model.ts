import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { AppError } from "../platform/errors";
import { ConsoleForm, FormList, FormText, literalUnion, QUIET } from "../platform/schemas";
import { type FieldError, fieldErrors } from "../platform/validation";
import { LOG_EXAMPLE, LOG_STORED_EXAMPLE, RESULT_EXAMPLE, RUN_EXAMPLE } from "./examples";
import { RESULT_STATUSES, type ResultStatus, RUN_STATUSES, type RunStatus } from "./schema";

const Time = Type.String({ format: "date-time" });
const NullableText = Type.Union([Type.String(), Type.Null()]);

/** E2ERun as it goes on the wire. */
export const RunSchema = Type.Object({
  id: Type.String({ format: "uuid" }),
  suite_id: Type.String(),
  journey_ids: Type.Array(Type.String()),
  environment_label: Type.String(),
  trigger_source: Type.Union([Type.Literal("manual"), Type.Literal("ci")]),
  protocol_version: Type.String(),
  status: literalUnion(RUN_STATUSES),
  started_at: Time,
  finished_at: Type.Union([Time, Type.Null()]),
});
export type RunView = Static<typeof RunSchema>;

/** E2ERunResult as it goes on the wire. */
export const ResultSchema = Type.Object({
  id: Type.String({ format: "uuid" }),
  journey_id: Type.String(),
  status: literalUnion(RESULT_STATUSES),
  failure_step: NullableText,
  failure_reason: NullableText,
  log_ref: NullableText,
  started_at: Type.Union([Time, Type.Null()]),
  finished_at: Type.Union([Time, Type.Null()]),
  duration_ms: Type.Union([Type.Integer(), Type.Null()]),
});
export type ResultView = Static<typeof ResultSchema>;

export const SuiteSchema = Type.Object({ id: Type.String(), journey_ids: Type.Array(Type.String()) });

export const RunReply = Type.Object({ data: RunSchema }, { examples: [{ data: RUN_EXAMPLE }] });
export const RunListReply = Type.Object(
  { data: Type.Array(RunSchema) },
  { examples: [{ data: [RUN_EXAMPLE] }] },
);
export const ResultListReply = Type.Object(
  { data: Type.Array(ResultSchema) },
  { examples: [{ data: [RESULT_EXAMPLE] }] },
);
export const SuiteListReply = Type.Object(
  { data: Type.Array(SuiteSchema) },
  { examples: [{ data: [{ id: "smoke", journey_ids: ["login", "device_list"] }] }] },
);
export const LogReply = Type.Object(
  { data: Type.Object({ run_id: Type.String(), journey_id: Type.String(), content: Type.String() }) },
  { examples: [{ data: LOG_EXAMPLE }] },
);
export const LogStoredReply = Type.Object(
  {
    data: Type.Object({
      run_id: Type.String(),
      journey_id: Type.String(),
      log_ref: Type.String(),
      bytes: Type.Integer(),
    }),
  },
  { examples: [{ data: LOG_STORED_EXAMPLE }] },
);

export const RunParams = Type.Object({ runId: Type.String({ description: "The run's id" }) });
export const JourneyParams = Type.Object({
  runId: Type.String({ description: "The run's id" }),
  journeyId: Type.String({ description: "The journey's id" }),
});

/** `POST /e2e/runs` headers: the protocol version (checked before the body's shape, 422 when wrong). */
export const CreateRunHeaders = Type.Object(
  {
    "x-e2e-protocol-version": Type.String({
      description: "The E2E protocol version the runner speaks: `1`",
      examples: ["1"],
    }),
  },
  { additionalProperties: true },
);

/** A journey log upload: e2e_log.v1 JSONL, UTF-8 without NUL, at most `max_log_upload_bytes`. */
export const LogUploadBody = Type.String({
  ...QUIET,
  contentMediaType: "application/x-ndjson",
  description: "e2e_log.v1 JSON Lines",
});

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

// ---------------------------------------------------------------- request bodies

/**
 * Each property schema carries the `message` shown when its value is wrong (after the field name),
 * and `tooLong` when exceeding a size limit deserves its own words (modules/platform/validation.ts).
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
        description: "A subset of the suite's journeys (default: all of them)",
        message: "must be a list of journey ids.",
        tooLong: "lists too many journeys.",
      }),
    ),
    idempotency_key: Type.Optional(
      Type.Union([Type.String({ maxLength: 255 }), Type.Null()], {
        description: "A retry with the same key (in the same environment) answers the same run",
        message: "must be a string or null.",
        tooLong: "must be at most 255 characters.",
      }),
    ),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: "Free-form, at most 16 KiB of JSON",
        message: "must be an object.",
      }),
    ),
  },
  {
    ...QUIET,
    additionalProperties: false,
    reportAll: true,
    examples: [
      {
        suite_id: "smoke",
        environment_label: "staging",
        trigger_source: "ci",
        idempotency_key: "build-4711",
      },
    ],
  },
);
/** The create body as sent; createRun trims the texts and defaults the optional fields. */
export type CreateRunBody = Static<typeof CreateRunBodySchema>;

export const ResultSubmitSchema = Type.Object(
  {
    journey_id: Type.String({ pattern: "\\S", message: "must be a non-empty journey id." }),
    status: literalUnion(RESULT_STATUSES, { message: `must be one of ${RESULT_STATUSES.join(", ")}.` }),
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

const MAX_RESULTS = 1000;

/** `POST /e2e/runs/{run_id}/results`: 1–1000 results, each journey once (checked by submitResults). */
export const ResultsBodySchema = Type.Object(
  {
    results: Type.Array(ResultSubmitSchema, {
      minItems: 1,
      maxItems: MAX_RESULTS,
      message: `must be a list of 1 to ${MAX_RESULTS} results.`,
    }),
  },
  {
    ...QUIET,
    additionalProperties: false,
    reportAll: true,
    examples: [
      {
        results: [
          { journey_id: "dashboard", status: "passed", duration_ms: 5120 },
          {
            journey_id: "login",
            status: "failed",
            failure_step: "submit",
            failure_reason: "expected the dashboard, got the sign-in page",
            duration_ms: 2300,
          },
        ],
      },
    ],
  },
);
export type ResultsBody = Static<typeof ResultsBodySchema>;

export const LEGACY_CREATE_FIELDS = ["client_version", "server_version"] as const;
const MAX_METADATA_BYTES = 16 * 1024;

export const invalidRequest = (message: string, details?: unknown) =>
  new AppError(400, "invalid_request", message, details);

const isLegacy = (error: FieldError) => (LEGACY_CREATE_FIELDS as readonly string[]).includes(error.field);

/**
 * Every problem of a create body (legacy fields first, then unknown properties, then the fields in
 * schema order), for the checks the spec puts before the protocol header: legacy fields, then the
 * environment label. The rest of the shape is the route schema's (after the header).
 */
export function createBodyErrors(body: Record<string, unknown>): FieldError[] {
  const errors = fieldErrors(CreateRunBodySchema, Value.Errors(CreateRunBodySchema, body), body).map(
    (error) =>
      isLegacy(error)
        ? {
            field: error.field,
            message: `${error.field} is a legacy field and is not accepted; send the X-E2E-Protocol-Version header.`,
          }
        : error,
  );
  return [...errors.filter(isLegacy), ...errors.filter((e) => !isLegacy(e))];
}

/** Throws 400 naming the first of `errors` that `stage` selects (details list them all). */
export function failStage(errors: FieldError[], stage: (error: FieldError) => boolean): void {
  const first = errors.find(stage);
  if (first) throw invalidRequest(first.message, { field: first.field, errors });
}

/** What the schema cannot say: metadata's size. */
export function checkMetadataSize(metadata: Record<string, unknown> | undefined): void {
  if (metadata !== undefined && Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) {
    throw invalidRequest(`metadata must be at most ${MAX_METADATA_BYTES} bytes of JSON.`, {
      field: "metadata",
    });
  }
}

/** The results to store: journey ids trimmed, each journey at most once. */
export function distinctResults(results: ResultSubmit[]): ResultSubmit[] {
  const seen = new Set<string>();
  return results.map((result, index) => {
    const journeyId = result.journey_id.trim();
    if (seen.has(journeyId))
      throw invalidRequest(`Journey '${journeyId}' appears more than once.`, {
        field: `results[${index}].journey_id`,
      });
    seen.add(journeyId);
    return { ...result, journey_id: journeyId };
  });
}

// ---------------------------------------------------------------- GET /e2e/runs query

const filter = (max: number, description: string) =>
  Type.Optional(
    Type.String({ maxLength: max, description, message: `must be one value of at most ${max} characters.` }),
  );

/** GET /e2e/runs query: optional filters and `limit` (an integer 1–500, default 50); newest first. */
export const RunFiltersQuery = Type.Object(
  {
    status: filter(50, "Only runs with this status"),
    suite_id: filter(200, "Only runs of this suite"),
    environment_label: filter(200, "Only runs in this environment"),
    trigger_source: filter(50, "manual or ci"),
    limit: Type.Optional(
      Type.String({
        pattern: "^\\s*0{0,2}(500|[1-4][0-9]{2}|[1-9][0-9]?)\\s*$",
        description: "At most this many runs (1–500, default 50)",
        message: "must be an integer from 1 to 500.",
      }),
    ),
  },
  { additionalProperties: true },
);
export type RunFiltersQuery = Static<typeof RunFiltersQuery>;

export interface RunFilters {
  status?: string;
  suite_id?: string;
  environment_label?: string;
  trigger_source?: string;
  limit?: number;
}

/** The filters of a checked query. */
export function runFilters(query: RunFiltersQuery): RunFilters {
  const { limit, ...filters } = query;
  return { ...filters, ...(limit === undefined ? {} : { limit: Number(limit) }) };
}

/** The console's E2E page: delete the runs chosen (checkboxes), at most 500 at once. */
export const DeleteRunsForm = ConsoleForm({
  action: literalUnion(["delete"], { message: "must be delete" }),
  ids: Type.Optional(FormList(100, 500)),
});

/** `GET /e2e` and `/e2e.csv`: the runs page's filters, order, page, open run and journey, and fragment. */
export const E2EPageQuery = Type.Object(
  {
    status: Type.Optional(FormText(50)),
    suite: Type.Optional(FormText(200)),
    environment: Type.Optional(FormText(200)),
    trigger: Type.Optional(FormText(50)),
    q: Type.Optional(FormText(200)),
    sort: Type.Optional(FormText(50)),
    dir: Type.Optional(FormText(4)),
    page: Type.Optional(FormText(6)),
    run: Type.Optional(FormText(100)),
    journey: Type.Optional(FormText(200)),
    history: Type.Optional(FormText(200)),
    fragment: Type.Optional(FormText(10)),
  },
  { additionalProperties: true },
);
export type E2EPageQuery = Static<typeof E2EPageQuery>;
