import { type Static, Type } from "@sinclair/typebox";
import { compileSchema } from "../platform/schemas";

export const BUILDERS = ["alert", "report"] as const;
export type Builder = (typeof BUILDERS)[number];

/** Text with something other than blanks in it, at most `max` characters. */
const Name = (max: number) => Type.String({ maxLength: max, pattern: "\\S" });

/** `POST /api/v1/builder-configurations/validate`; any problem is 422 invalid_validation_payload naming the field. */
export const BuilderValidationBody = Type.Object({
  builder: Type.Union(BUILDERS.map((b) => Type.Literal(b))),
  schema_id: Name(200),
  // Accepted for older clients and ignored: fields are the product's, whatever version they were saved with.
  schema_version: Type.Optional(Name(100)),
  selections: Type.Array(
    Type.Object({
      slot_id: Type.String({ minLength: 1 }),
      selected_key: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    }),
    { maxItems: 500 },
  ),
});
export type BuilderValidationBody = Static<typeof BuilderValidationBody>;
export const builderValidationBody = compileSchema(BuilderValidationBody);
export const BUILDER_VALIDATION_FIELDS = ["builder", "schema_id", "schema_version", "selections"];
