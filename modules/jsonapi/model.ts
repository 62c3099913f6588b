import { type Static, Type } from "@sinclair/typebox";
import { compileSchema, JsonObject } from "../platform/schemas";

/**
 * A JSON:API request document. `data.type` is compared with the resource of the URL by the handler
 * (409 type_mismatch, checked before the attributes); absent or null attributes/relationships read as {}.
 */
export const ResourceDocument = Type.Object({
  data: Type.Object({
    type: Type.Optional(Type.Unknown()),
    id: Type.Optional(Type.Unknown()),
    attributes: Type.Optional(Type.Union([JsonObject, Type.Null()])),
    relationships: Type.Optional(Type.Union([JsonObject, Type.Null()])),
  }),
});
export type ResourceDocument = Static<typeof ResourceDocument>;
export const resourceDocument = compileSchema(ResourceDocument);

/** PATCH /devices/:id: the attributes an operator may change; any other is refused. */
export const DeviceAttributes = Type.Object(
  {
    approval_status: Type.Optional(Type.String()),
    product_name: Type.Optional(Type.Unknown()),
    metadata: Type.Optional(JsonObject),
  },
  { additionalProperties: false },
);
export type DeviceAttributes = Static<typeof DeviceAttributes>;
export const deviceAttributes = compileSchema(DeviceAttributes);

export const COMMAND_TTL_MIN_SECONDS = 10;
export const COMMAND_TTL_MAX_SECONDS = 30 * 86_400;

/** POST /pending_commands (the command's own shape is checked by the commands service). */
export const PendingCommandAttributes = Type.Object({
  device_id: Type.Optional(Type.Unknown()),
  type: Type.String(),
  args: Type.Optional(Type.Unknown()),
  payload: Type.Optional(Type.Unknown()),
  public_key: Type.Optional(Type.Unknown()),
  ttl_seconds: Type.Optional(
    Type.Union([
      Type.Integer({ minimum: COMMAND_TTL_MIN_SECONDS, maximum: COMMAND_TTL_MAX_SECONDS }),
      Type.Null(),
    ]),
  ),
});
export type PendingCommandAttributes = Static<typeof PendingCommandAttributes>;
export const pendingCommandAttributes = compileSchema(PendingCommandAttributes);
