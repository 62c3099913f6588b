/**
 * The one translation of a route's schema validation (Elysia checks params, query, headers and body
 * against the TypeBox schemas in the route options) into the API's typed 400: `invalid_request`,
 * naming the first wrong field in the order the schema declares its properties (the order of concern
 * the spec gives), in the words its schema carries:
 * - `message` on a property (or the root): what its value must be (`"must be a JSON object"`);
 *   on the root it is the whole sentence for a value of the wrong type;
 * - `tooLong` on a property: the words for a size limit broken;
 * - a missing required property (or null for it) "is required", an unknown one "is not a known property";
 * - `reportAll` on the root: `details.errors` lists every wrong field (E2E), not only the first;
 * - `refusal` on the root: the status, code and message the spec gives a refused body of this route
 *   instead (`details.field` still names the first wrong field; with `errorMap`, `details.errors`
 *   maps every wrong field to its message, as the reports API answers its other 422s); on a
 *   property: the same for a request whose first wrong field is in it (JSON:API's 409
 *   `type_mismatch` for `data.type`, checked before the attributes because declared before them).
 */
import type { Static, TSchema } from "@sinclair/typebox";
import type { TypeCheck } from "@sinclair/typebox/compiler";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/errors";
import { AppError, badRequest } from "./errors";
import { BodyError } from "./json-body";

/** A route's own answer to input its schema refuses (the spec's code for it), instead of `invalid_request`. */
export interface Refusal {
  status: number;
  code: string;
  message: string;
  errorMap?: boolean;
}

type Annotated = TSchema & { message?: string; tooLong?: string; reportAll?: boolean; refusal?: Refusal };

export interface FieldError {
  field: string;
  message: string;
}

/** What Elysia's ValidationError carries that this needs. */
export interface SchemaValidation {
  type: string;
  value: unknown;
  validator: Validator | TSchema;
}

type Validator = { schema?: TSchema; Schema?(): TSchema; Errors?(value: unknown): Iterable<ValueError> };

const SIZE_ERRORS = [ValueErrorType.StringMaxLength, ValueErrorType.ArrayMaxItems];

/** A size limit broken, also inside a union (`string | null` reports only that no member matched). */
function isSizeError(error: ValueError): boolean {
  if (SIZE_ERRORS.includes(error.type)) return true;
  return error.errors.some((member) => [...member].some(isSizeError));
}

/** The schema one step down `segment` from `schema` (through unions), or undefined. */
function childSchema(schema: TSchema, segment: string): TSchema | undefined {
  const node = schema as TSchema & {
    properties?: Record<string, TSchema>;
    items?: TSchema;
    patternProperties?: Record<string, TSchema>;
    anyOf?: TSchema[];
  };
  if (node.properties && Object.hasOwn(node.properties, segment)) return node.properties[segment];
  if (node.items && /^\d+$/.test(segment)) return node.items;
  if (node.patternProperties) return Object.values(node.patternProperties)[0];
  for (const member of node.anyOf ?? []) {
    const found = childSchema(member, segment);
    if (found) return found;
  }
  return undefined;
}

function valueAt(value: unknown, segments: string[]): unknown {
  let node = value;
  for (const segment of segments) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

/** `results.0.journey_id` as people write it: `results[0].journey_id`. */
function fieldName(segments: string[]): string {
  return segments.reduce(
    (name, segment) =>
      /^\d+$/.test(segment) ? `${name}[${segment}]` : name ? `${name}.${segment}` : segment,
    "",
  );
}

/** Where `segments` sit in the schema's declared order, level by level (unknown properties first). */
function rankOf(schema: TSchema, segments: string[]): number[] {
  const rank: number[] = [];
  let node: TSchema | undefined = schema;
  for (const segment of segments) {
    const properties = node && (node as { properties?: object }).properties;
    rank.push(
      /^\d+$/.test(segment) ? Number(segment) : properties ? Object.keys(properties).indexOf(segment) : 0,
    );
    node = node && childSchema(node, segment);
  }
  return rank;
}

function compareRanks(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** One field error for each wrong field of `value` against `schema`, in the schema's order of concern. */
export function fieldErrors(schema: TSchema, errors: Iterable<ValueError>, value: unknown): FieldError[] {
  return rankedFieldErrors(schema, errors, value).map(({ field, message }) => ({ field, message }));
}

type RankedError = FieldError & { rank: number[]; refusal?: Refusal };

/** fieldErrors, each with the refusal of the deepest schema on its path that has one. */
function rankedFieldErrors(schema: TSchema, errors: Iterable<ValueError>, value: unknown): RankedError[] {
  const byField = new Map<string, RankedError>();
  for (const error of errors) {
    const segments = error.path
      .split("/")
      .slice(1)
      .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
    if (segments.length === 0) continue;
    // The deepest schema on the path that says what its value must be names the field.
    let node: TSchema | undefined = schema;
    let named = segments.length;
    let annotated: Annotated | undefined;
    let refusal: Refusal | undefined;
    for (let i = 0; i < segments.length && node; i++) {
      node = childSchema(node, segments[i]!);
      refusal = (node as Annotated | undefined)?.refusal ?? refusal;
      if (node && ((node as Annotated).message || (node as Annotated).tooLong)) {
        annotated = node as Annotated;
        named = i + 1;
      }
    }
    const path = segments.slice(0, annotated ? named : segments.length);
    const field = fieldName(path);
    if (byField.has(field)) continue;
    const parent = childSchemaPath(schema, path.slice(0, -1)) as
      | (TSchema & { required?: string[] })
      | undefined;
    let message: string;
    if (error.type === ValueErrorType.ObjectAdditionalProperties || (!node && !annotated)) {
      message = `${field} is not a known property`;
    } else if (
      error.type === ValueErrorType.ObjectRequiredProperty ||
      (valueAt(value, path) === null && parent?.required?.includes(path[path.length - 1]!))
    ) {
      message = `${field} is required`;
    } else if (annotated?.tooLong && isSizeError(error)) {
      message = `${field} ${annotated.tooLong}`;
    } else {
      message = `${field} ${annotated?.message ?? "is not valid"}`;
    }
    byField.set(field, { field, message, rank: rankOf(schema, path), refusal });
  }
  return [...byField.values()].sort((a, b) => compareRanks(a.rank, b.rank));
}

function childSchemaPath(schema: TSchema, segments: string[]): TSchema | undefined {
  let node: TSchema | undefined = schema;
  for (const segment of segments) node = node && childSchema(node, segment);
  return node;
}

/** Where in the request each location is, for the message of a wrong value of the whole. */
const WHOLE: Record<string, string> = {
  body: "The request body must be a JSON object",
  query: "The query string is not valid",
  params: "The path is not valid",
  headers: "The request headers are not valid",
};

/**
 * The typed error for a failed route validation. A body that could not be read (too large, not JSON)
 * reaches validation as a BodyError (readJsonBody) and keeps its own error.
 */
export function validationFailure(failure: SchemaValidation): AppError {
  if (failure.value instanceof BodyError) return failure.value.error;
  const { schema, errors } = schemaErrors(failure);
  if (schema.refusal) return refused(schema.refusal, fieldErrors(schema, errors, failure.value));
  const rootError =
    failure.value === undefined ||
    errors.some((e) => e.path === "" && e.type !== ValueErrorType.ObjectRequiredProperty);
  if (rootError && failure.type === "body") return badRequest(schema.message ?? WHOLE.body!);
  const ranked = rankedFieldErrors(schema, errors, failure.value);
  const [first] = ranked;
  if (!first) return badRequest(schema.message ?? WHOLE[failure.type] ?? "The request is not valid");
  if (first.refusal)
    return refused(
      first.refusal,
      ranked.filter((f) => f.refusal === first.refusal),
    );
  const fields = ranked.map(({ field, message }) => ({ field, message }));
  return badRequest(
    first.message,
    schema.reportAll ? { field: first.field, errors: fields } : { field: first.field },
  );
}

function schemaErrors(failure: SchemaValidation): { schema: Annotated; errors: ValueError[] } {
  const validator = failure.validator as Validator;
  const schema = (validator.schema ?? validator.Schema?.() ?? failure.validator) as Annotated;
  return { schema, errors: [...(validator.Errors?.(failure.value) ?? [])] };
}

/**
 * The same for a console page (a form post, a page's query): the first wrong field in its schema's
 * words, as a sentence a person reads on the 400 page, still `invalid_request` with `{field}`.
 */
export function formValidationFailure(failure: SchemaValidation): AppError {
  if (failure.value instanceof BodyError) return failure.value.error;
  const { schema, errors } = schemaErrors(failure);
  const [first] = failure.value === undefined ? [] : rankedFieldErrors(schema, errors, failure.value);
  const form = failure.type === "body";
  const what = form ? "The form was not accepted" : "The address was not understood";
  const next = form
    ? "Nothing was changed; go back, correct it and send it again."
    : "Check the link or the filters and try again.";
  if (!first) return badRequest(`${what}. ${form ? "Reload its page and try again." : next}`);
  return badRequest(`${what}: ${first.message}. ${next}`, { field: first.field });
}

function refused({ status, code, message, errorMap }: Refusal, fields: FieldError[]): AppError {
  const map = errorMap ? { errors: Object.fromEntries(fields.map((f) => [f.field, f.message])) } : {};
  const details = fields[0] ? { field: fields[0].field, ...map } : errorMap ? map : undefined;
  return new AppError(status, code, message, details);
}

const credentialChecks = new WeakMap<Request, () => Promise<unknown>>();

/**
 * For a route that checks its caller's credentials in the handler (the device API: in the heartbeat's
 * batched statement), registered at the transform stage: a request whose input fails the route's
 * schema runs this first, so a caller without credentials gets their error, never the input rules.
 * Costs nothing on the success path.
 */
export function credentialsBeforeInput(request: Request, check: () => Promise<unknown>): void {
  credentialChecks.set(request, check);
}

/** Runs the credential check registered for `request`, if any (it throws the credential error). */
export async function checkCredentialsOf(request: Request): Promise<void> {
  await credentialChecks.get(request)?.();
}

/**
 * Throws the typed 400 validationFailure gives for `value` against a compiled body schema: for a
 * service that takes input from somewhere other than its route (and for its unit tests), so a value
 * is refused in the same words wherever it comes from.
 */
export function assertValidBody<T extends TSchema>(
  check: TypeCheck<T>,
  value: unknown,
): asserts value is Static<T> {
  if (check.Check(value)) return;
  const validator = { Schema: () => check.Schema(), Errors: (v: unknown) => check.Errors(v) };
  throw validationFailure({ type: "body", value, validator });
}
