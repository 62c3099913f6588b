import { type TSchema, Type } from "@sinclair/typebox";
import { JsonObject, QUIET } from "../platform/schemas";

/** The shapes of JSON:API documents; each feature builds its resources' documents with them (its model.ts). */

// ---------------------------------------------------------------- the documents the API answers

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const Time = Type.String({ format: "date-time" });
const Link = Type.String({ description: "A path under /api/json" });

/** A resource identifier in a relationship. */
export const Related = (type: string) =>
  Type.Object({ data: Type.Object({ type: Type.Literal(type), id: Type.String() }) });

/** A resource object of `type`: its attributes, relationships (when it has any) and `links.self`. */
export function resourceSchema<A extends TSchema, R extends TSchema>(
  type: string,
  attributes: A,
  relationships?: R,
) {
  return Type.Object({
    type: Type.Literal(type),
    id: Type.String(),
    attributes,
    ...(relationships ? { relationships } : {}),
    links: Type.Object({ self: Link }),
  });
}

/** `{data: [resource…]}`: a list that is not paged. */
export const allDocument = <T extends TSchema>(resource: T, meta?: TSchema) =>
  Type.Object({ data: Type.Array(resource), ...(meta ? { meta } : {}) });

/** `{data: resource}`. */
export const oneDocument = <T extends TSchema>(resource: T) => Type.Object({ data: resource });

/** `{data: [resource…], links: {next}}`: `links.next` is the next keyset page, null on the last. */
export const listDocument = <T extends TSchema>(resource: T, meta?: TSchema) =>
  Type.Object({
    data: Type.Array(resource),
    links: Type.Object({ next: Nullable(Link) }),
    ...(meta ? { meta } : {}),
  });

export const ResourceIdParams = Type.Object({ id: Type.String({ description: "The resource's id" }) });

const PageSize = (max: number) =>
  Type.String({
    pattern: "^[0-9]+$",
    description: `Page size, at most ${max}`,
    message: "must be a positive integer",
  });

/** The keyset page of a list: `page[size]` (or `page[limit]`) and `page[after]` (`links.next` carries it). */
export const pageQuery = (max: number) => ({
  "page[size]": Type.Optional(PageSize(max)),
  "page[limit]": Type.Optional(PageSize(max)),
  "page[after]": Type.Optional(Type.String({ description: "The cursor in `links.next`" })),
});

/**
 * A JSON:API request document writing a `type` resource: `data.type` is checked first (409
 * `type_mismatch`, declared before the attributes: validationFailure follows the declared order),
 * then the attributes against `attributes`. Absent attributes read as {}.
 */
export function writeDocument<A extends TSchema>(type: string, attributes: A, options: TypeOption = {}) {
  return writeDocumentOf(type, Type.Optional(attributes), options);
}

/** writeDocument whose attributes are required (they say what to change). */
export function changeDocument<A extends TSchema>(type: string, attributes: A, options: TypeOption = {}) {
  return writeDocumentOf(type, attributes, options);
}

/** `typeOptional`: a resource whose API always took documents without `data.type` (custom reports). */
type TypeOption = { typeOptional?: boolean };

function writeDocumentOf<A extends TSchema>(type: string, attributes: A, { typeOptional }: TypeOption) {
  const typeSchema = Type.Literal(type, {
    refusal: { status: 409, code: "type_mismatch", message: `data.type must be ${type}` },
  });
  return Type.Object(
    {
      data: Type.Object(
        {
          type: typeOptional ? Type.Optional(typeSchema) : typeSchema,
          id: Type.Optional(Type.Unknown({ description: "The resource's id (PATCH: must match the URL)" })),
          attributes,
          relationships: Type.Optional(JsonObject),
        },
        { additionalProperties: true },
      ),
    },
    { ...QUIET, additionalProperties: true, message: "The body must be a JSON:API document with data" },
  );
}
