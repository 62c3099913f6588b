/**
 * Building blocks of the routes' TypeBox schemas (each feature's model.ts declares its own, in its
 * route options): Elysia validates with them, validationFailure (validation.ts) turns a refusal into
 * the API's typed error, and the OpenAPI document is written from them.
 */
import {
  type ObjectOptions,
  type SchemaOptions,
  type StringOptions,
  type TLiteral,
  type TProperties,
  type TSchema,
  type TUnion,
  Type,
} from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";

/** Any JSON object (unknown keys kept, arrays refused). */
export const JsonObject = Type.Record(Type.String(), Type.Unknown(), { message: "must be a JSON object" });

/**
 * Any JSON value, with one shape named first for the document's readers (a run_script's output among
 * every command type's): `anyOf` over JSON's types rather than an empty schema, which matches
 * anything and which linters rightly flag.
 */
export const JsonValueOr = <T extends TSchema>(named: T, options: { description: string }) =>
  Type.Union(
    [
      named,
      Type.Record(Type.String(), Type.Unknown()),
      Type.Array(Type.Unknown()),
      Type.String(),
      Type.Number(),
      Type.Boolean(),
      Type.Null(),
    ],
    options,
  );

export const compileSchema = <T extends TSchema>(schema: T): TypeCheck<T> => TypeCompiler.Compile(schema);

/** The API's error body (docs/errors.md): one code per HTTP status, `details` often `{field}`. */
export const ApiErrorSchema = Type.Object({
  error: Type.Object({
    code: Type.String({ description: "One of docs/errors.md; each code has one HTTP status" }),
    message: Type.String(),
    details: Type.Optional(Type.Unknown({ description: "Often `{field}` naming the offending field" })),
  }),
});

/** The error replies a route can answer, each with the API's error body (route `response` options). */
export function errorReplies<const S extends number>(...statuses: S[]): Record<S, typeof ApiErrorSchema> {
  return Object.fromEntries(statuses.map((status) => [status, ApiErrorSchema])) as Record<
    S,
    typeof ApiErrorSchema
  >;
}

/** The device API's credential: the token from registration, as `?api_key=` (absent: 401). */
export const DeviceKeyQuery = Type.Object(
  {
    api_key: Type.Optional(Type.String({ description: "The device's API token, from registration" })),
  },
  { additionalProperties: true },
);

/** A path holding a device id. */
export const DeviceParams = Type.Object({
  device_id: Type.String({ description: "The device's id (UUID)" }),
});

/** A reply without a body (204). */
export const NoContent = Type.Literal("", { description: "No content" });

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };

/**
 * A union of string literals from a constant list (`["queued", "running"]`), typed as that union:
 * TypeBox types a union built by `map` as `never`, which only a tuple type avoids.
 */
export function literalUnion<const T extends readonly string[]>(
  values: T,
  options?: SchemaOptions,
): TUnion<Literals<T>> {
  return Type.Union(
    values.map((value) => Type.Literal(value)),
    options,
  ) as unknown as TUnion<Literals<T>>;
}

/** JSON:API's error document (`/api/json`): the same codes as ApiErrorSchema, in `errors[]`. */
export const JsonApiErrorsSchema = Type.Object({
  errors: Type.Array(
    Type.Object({
      status: Type.String(),
      code: Type.String(),
      title: Type.String(),
      detail: Type.Optional(Type.String()),
      source: Type.Optional(Type.Object({}, { additionalProperties: true })),
      meta: Type.Optional(Type.Unknown()),
    }),
  ),
});

/** The error replies of a JSON:API route (`errors[]`). */
export function jsonApiErrorReplies<const S extends number>(
  ...statuses: S[]
): Record<S, typeof JsonApiErrorsSchema> {
  return Object.fromEntries(statuses.map((status) => [status, JsonApiErrorsSchema])) as Record<
    S,
    typeof JsonApiErrorsSchema
  >;
}

/**
 * For the options of a route's body schema. Elysia describes a refused body in its error message, a
 * pretty-printed copy of the whole value unless the failing schema has an `error` of its own: seconds
 * of CPU for a deeply nested body. validationFailure writes the answer from the schema anyway.
 */
export const QUIET = { error: "The request is not valid" } as const;

/**
 * A console form's body (urlencoded or multipart, as Elysia parses it): its fields, each text, and
 * the CSRF token the access check reads. Fields the form's schema does not name are ignored, not
 * refused: a browser posts whatever a form holds (a submit button's name, a field a script added),
 * and Django's and Rails' forms ignore them alike. Every named field is checked.
 */
export function ConsoleForm<const P extends TProperties>(fields: P, options: ObjectOptions = {}) {
  return Type.Object(
    { _csrf: Type.Optional(Type.String({ description: "The form's CSRF token" })), ...fields },
    { ...QUIET, additionalProperties: true, ...options },
  );
}

/** A form without fields of its own (a button): its body may be empty (an API token's call). */
export const ButtonForm = Type.Optional(ConsoleForm({}));

/** A form field's text: one value, at most `maxLength` characters (a repeated field is refused). */
export function FormText(maxLength: number, options: StringOptions = {}) {
  return Type.String({
    maxLength,
    message: "must be text",
    tooLong: `is longer than ${maxLength} characters`,
    ...options,
  });
}

/**
 * A field a form may post several times (checkboxes, a multiple select): Elysia gives one value as
 * text and several as a list; the handler reads it as a list with `formList`.
 */
export function FormList(maxLength: number, maxItems = 1000, options: SchemaOptions = {}) {
  const item = Type.String({ maxLength });
  return Type.Union([item, Type.Array(item, { maxItems })], {
    message: "must be one or more texts",
    tooLong: `has a value longer than ${maxLength} characters, or more than ${maxItems} values`,
    ...options,
  });
}

/** A FormList value as a list (absent: empty). */
export function formList(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}
