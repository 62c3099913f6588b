import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { compileSchema, JsonObject } from "../platform/schemas";
import type { Device } from "./rows";
import { MAC_PATTERN, PRODUCT_NAME_MAX } from "./validation";

/**
 * `POST /api/v1/devices/register`. Metadata and schema limits (size, depth, keys) and the schema's
 * own rules are checked after the shape (registration.ts): they have codes of their own.
 */
export const RegistrationBody = Type.Object({
  mac_address: Type.String({ pattern: MAC_PATTERN }),
  product_name: Type.Optional(Type.Union([Type.String({ maxLength: PRODUCT_NAME_MAX }), Type.Null()])),
  metadata: Type.Optional(Type.Union([JsonObject, Type.Null()])),
  schema_definition: Type.Optional(Type.Unknown()),
  /** Optional: the device's own secret (created at its first registration; proves its identity). */
  device_secret: Type.Optional(Type.String({ minLength: 32, maxLength: 256 })),
  /** Optional: the token the device holds, to bind a secret to a device registered before secrets. */
  api_token: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  /** Optional: an enrolment token (Settings): a new device follows its policy (approved or pending). */
  enrolment_token: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
});
export type RegistrationBody = Static<typeof RegistrationBody>;
export const registrationBody = compileSchema(RegistrationBody);

/** `POST /api/v1/devices/approval` (operators). */
export const ApprovalBody = Type.Object({
  ids: Type.Array(Type.String()),
  approval_status: Type.Union([Type.Literal("approved"), Type.Literal("rejected")]),
});
export type ApprovalBody = Static<typeof ApprovalBody>;
export const approvalBody = compileSchema(ApprovalBody);

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Time = Type.String({ format: "date-time" });

/** A device on the wire, as `deviceJson` writes it (documented in the OpenAPI document). */
export const DeviceJsonSchema = Type.Object({
  id: Type.String({ format: "uuid" }),
  mac_address: Type.String({ pattern: "^([0-9A-F]{2}:){5}[0-9A-F]{2}$" }),
  product_name: Nullable(Type.String()),
  approval_status: Type.Union([Type.Literal("pending"), Type.Literal("approved"), Type.Literal("rejected")]),
  ipv4_address: Nullable(Type.String()),
  metadata: JsonObject,
  schema: Type.Optional(JsonObject),
  schema_version: Nullable(Type.String()),
  last_seen_at: Nullable(Time),
  online: Type.Boolean(),
  remote_access_requested: Type.Boolean(),
  approval_changed_at: Nullable(Time),
  created_at: Time,
  updated_at: Time,
});

/** `POST /api/v1/devices/register` → 201: the device, and its token when it is approved. */
export const RegistrationReply = Type.Object({
  data: Type.Composite([DeviceJsonSchema, Type.Object({ api_token: Type.Optional(Type.String()) })]),
});

/** A device on the wire (snake_case, ISO 8601 UTC timestamps). */
export function deviceJson(device: Device, options: { schema?: boolean } = {}) {
  return {
    id: device.id,
    mac_address: device.macAddress,
    product_name: device.productName,
    approval_status: device.approvalStatus,
    ipv4_address: device.ipv4Address,
    metadata: device.metadata,
    ...(options.schema === false ? {} : { schema: device.schema }),
    schema_version: device.schemaVersion,
    last_seen_at: device.lastSeenAt?.toISOString() ?? null,
    online: device.online,
    remote_access_requested: device.remoteAccessRequested,
    approval_changed_at: device.approvalChangedAt?.toISOString() ?? null,
    created_at: device.createdAt.toISOString(),
    updated_at: device.updatedAt.toISOString(),
  };
}

export type DeviceJson = ReturnType<typeof deviceJson>;
