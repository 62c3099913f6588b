import { type TSchema, Type } from "@sinclair/typebox";
import { COMMAND_STATUSES } from "../commands/service";
import { DeviceJsonSchema } from "../devices/model";
import { JsonObject, literalUnion, QUIET } from "../platform/schemas";

/** PATCH /devices/:id: the attributes an operator may change; any other is refused. */
export const DeviceAttributes = Type.Object(
  {
    approval_status: Type.Optional(
      Type.String({ message: "must be a string", description: "pending, approved or rejected" }),
    ),
    product_name: Type.Optional(Type.Unknown({ description: "A string, or null for none" })),
    metadata: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);

export const COMMAND_TTL_MIN_SECONDS = 10;
export const COMMAND_TTL_MAX_SECONDS = 30 * 86_400;

/** POST /pending_commands (the command's own shape is checked by the commands service). */
export const PendingCommandAttributes = Type.Object(
  {
    device_id: Type.Optional(
      Type.Unknown({ description: "The device, unless `relationships.device` names it" }),
    ),
    type: Type.String({ message: "must be a command type" }),
    args: Type.Optional(Type.Unknown()),
    payload: Type.Optional(Type.Unknown()),
    public_key: Type.Optional(Type.Unknown()),
    ttl_seconds: Type.Optional(
      Type.Union(
        [Type.Integer({ minimum: COMMAND_TTL_MIN_SECONDS, maximum: COMMAND_TTL_MAX_SECONDS }), Type.Null()],
        { message: `must be an integer from ${COMMAND_TTL_MIN_SECONDS} to ${COMMAND_TTL_MAX_SECONDS}` },
      ),
    ),
  },
  { additionalProperties: true },
);

// ---------------------------------------------------------------- the documents the API answers

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Time = Type.String({ format: "date-time" });
const Link = Type.String({ description: "A path under /api/json" });

/** A resource identifier in a relationship. */
const Related = (type: string) =>
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

export const DeviceListQuery = Type.Object(
  {
    "filter[approval_status]": Type.Optional(Type.String({ description: "pending, approved or rejected" })),
    "filter[connectivity_status]": Type.Optional(Type.String({ description: "online or offline" })),
    "filter[product]": Type.Optional(Type.String({ description: "Exact product name" })),
    "filter[search]": Type.Optional(Type.String({ description: "Part of the MAC address, product or name" })),
    sort: Type.Optional(Type.String({ description: "A device sort, `-` before it for descending" })),
    ...pageQuery(500),
  },
  { additionalProperties: true },
);

export const DeviceResource = resourceSchema("device", Type.Omit(DeviceJsonSchema, ["id"]));
export const DeviceListDocument = listDocument(
  DeviceResource,
  Type.Object({ active_filters: Type.Record(Type.String(), Type.String()) }),
);
export const DeviceDocument = oneDocument(DeviceResource);

export const CommandListQuery = Type.Object(
  {
    "filter[device_id]": Type.Optional(Type.String({ description: "One device's commands" })),
    "filter[status]": Type.Optional(
      literalUnion(COMMAND_STATUSES, { message: `must be one of ${COMMAND_STATUSES.join(", ")}` }),
    ),
    ...pageQuery(500),
  },
  { additionalProperties: true },
);

export const CommandResource = resourceSchema(
  "pending_command",
  Type.Object({
    device_id: Type.String({ format: "uuid" }),
    type: Type.String(),
    args: Type.Array(Type.Unknown()),
    payload: Nullable(JsonObject),
    payload_ref: Nullable(Type.String()),
    public_key: Nullable(Type.String()),
    status: literalUnion(COMMAND_STATUSES),
    queued_at: Time,
    expires_at: Time,
    delivered_at: Nullable(Time),
    completed_at: Nullable(Time),
    output: Type.Unknown({ description: "What the device answered (null until it did)" }),
    error: Nullable(Type.String()),
    queued_by: Nullable(Type.String()),
  }),
  Type.Object({ device: Related("device") }),
);
export const CommandListDocument = listDocument(CommandResource);
export const CommandDocument = oneDocument(CommandResource);

export const TelemetryListQuery = Type.Object(
  {
    "filter[device_id]": Type.Optional(Type.String({ description: "One device's events" })),
    "filter[from]": Type.Optional(Type.String({ description: "ISO 8601, inclusive" })),
    "filter[to]": Type.Optional(Type.String({ description: "ISO 8601, exclusive" })),
    ...pageQuery(1000),
  },
  { additionalProperties: true },
);

export const TelemetryResource = resourceSchema(
  "telemetry_event",
  Type.Object({ device_id: Type.String({ format: "uuid" }), recorded_at: Time, payload: JsonObject }),
  Type.Object({ device: Related("device") }),
);
export const TelemetryListDocument = listDocument(TelemetryResource);
export const TelemetryDocument = oneDocument(TelemetryResource);

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

export const DeviceWriteDocument = writeDocument("device", DeviceAttributes);
export const CommandCreateDocument = changeDocument("pending_command", PendingCommandAttributes);
