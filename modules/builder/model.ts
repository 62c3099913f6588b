import { type Static, Type } from "@sinclair/typebox";
import { literalUnion, QUIET } from "../platform/schemas";

export const BUILDERS = ["alert", "report"] as const;
export type Builder = (typeof BUILDERS)[number];

/** Text with something other than blanks in it, at most `max` characters. */
const Name = (max: number, description?: string) =>
  Type.String({ maxLength: max, pattern: "\\S", ...(description ? { description } : {}) });

const invalidOptionsRequest = {
  refusal: { status: 422, code: "invalid_options_request", message: "Invalid schema options request" },
};

/** `GET /api/v1/builder-schemas/:schema_id/versions/:schema_version/options`; anything wrong is 422. */
export const BuilderOptionsParams = Type.Object(
  {
    schema_id: Name(200, "The product whose devices announce the schema"),
    schema_version: Name(100, "Any version (a product has one: `current`); kept for saved clients"),
  },
  invalidOptionsRequest,
);

export const BuilderOptionsQuery = Type.Object(
  { builder: Type.Optional(literalUnion(BUILDERS, { description: "Which builder asks (default alert)" })) },
  { ...invalidOptionsRequest, additionalProperties: true },
);

/** `POST /api/v1/builder-configurations/validate`; any problem is 422 invalid_validation_payload naming the field. */
export const BuilderValidationBody = Type.Object(
  {
    builder: literalUnion(BUILDERS),
    schema_id: Name(200),
    // Accepted for older clients and ignored: fields are the product's, whatever version they were saved with.
    schema_version: Type.Optional(Name(100)),
    selections: Type.Array(
      Type.Object(
        {
          slot_id: Type.String({ minLength: 1 }),
          selected_key: Type.Optional(Type.Union([Type.String(), Type.Null()])),
        },
        { additionalProperties: true },
      ),
      { maxItems: 500 },
    ),
  },
  {
    ...QUIET,
    additionalProperties: true,
    refusal: { status: 422, code: "invalid_validation_payload", message: "Invalid validation payload" },
    examples: [
      {
        builder: "alert",
        schema_id: "edge-gateway",
        selections: [{ slot_id: "metric", selected_key: "memory.used_percent" }],
      },
    ],
  },
);
export type BuilderValidationBody = Static<typeof BuilderValidationBody>;

/** `GET /api/v1/builder-schemas` → 200: one schema per product approved devices announce. */
export const BuilderSchemasReply = Type.Object({
  data: Type.Array(
    Type.Object({
      schema_id: Type.String(),
      schema_version: Type.String(),
      product_name: Type.String(),
      readable: Type.Literal(true),
    }),
  ),
});

const SchemaOptionSchema = Type.Object({
  key: Type.String(),
  label: Type.String(),
  value_type: Type.String({ description: "The declared type; `conflict` when devices disagree" }),
  order_index: Type.Integer(),
  selectable: Type.Boolean(),
  conflict: Type.Optional(Type.Array(Type.Object({ type: Type.String(), devices: Type.Integer() }))),
});

/** `GET …/options` → 200: the product's current fields. */
export const BuilderOptionsReply = Type.Object({
  data: Type.Object({
    schema_id: Type.String(),
    schema_version: Type.String(),
    builder: literalUnion(BUILDERS),
    load_time_ms: Type.Integer(),
    options: Type.Array(SchemaOptionSchema),
  }),
});

/** `POST /api/v1/builder-configurations/validate` → 200 (unwrapped, as in the reference). */
export const BuilderValidationReply = Type.Object({
  valid: Type.Boolean(),
  issues: Type.Array(
    Type.Object({
      issue_code: literalUnion([
        "invalid_schema_field",
        "schema_unavailable",
        "schema_conflict",
        "schema_access_lost",
      ]),
      message: Type.String(),
      slot_id: Type.Union([Type.String(), Type.Null()]),
      blocking: Type.Boolean(),
    }),
  ),
  cleared_slot_ids: Type.Array(Type.String()),
});
