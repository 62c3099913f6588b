import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { listDocument, oneDocument, pageQuery, resourceSchema, writeDocument } from "../jsonapi/model";
import { ConsoleForm, FormList, FormText, JsonObject, literalUnion, QUIET } from "../platform/schemas";
import { DEVICE_SORTS } from "./listing";
import type { Device } from "./rows";
import { MAC_PATTERN, PRODUCT_NAME_MAX } from "./validation";

/**
 * `POST /api/v1/devices/register`. Metadata and schema limits (size, depth, keys) and the schema's
 * own rules are checked after the shape (registration.ts): they have codes of their own.
 */
const secret = (min: number, description: string) =>
  Type.Optional(
    Type.String({
      minLength: min,
      maxLength: 256,
      description,
      message: `must be a string of ${min} to 256 characters`,
    }),
  );

export const RegistrationBody = Type.Object(
  {
    mac_address: Type.String({
      pattern: MAC_PATTERN,
      message: "must be a MAC address such as AA:BB:CC:DD:EE:FF",
    }),
    product_name: Type.Optional(
      Type.Union([Type.String({ maxLength: PRODUCT_NAME_MAX }), Type.Null()], {
        message: `must be a string of at most ${PRODUCT_NAME_MAX} characters`,
      }),
    ),
    metadata: Type.Optional(Type.Union([JsonObject, Type.Null()], { message: "must be a JSON object" })),
    labels: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description:
          "The device's own `key=value` labels (docs/fleet.md): replace those it declared before; absent keeps them",
        message: "must be an object of string values",
      }),
    ),
    schema_definition: Type.Optional(
      Type.Unknown({ description: "The device's telemetry JSON Schema (422 when not usable)" }),
    ),
    device_secret: secret(
      32,
      "The device's own secret (created at its first registration; proves its identity)",
    ),
    api_token: secret(
      1,
      "The token the device holds, to bind a secret to a device registered before secrets",
    ),
    enrolment_token: secret(1, "An enrolment token (Settings): a new device follows its policy"),
  },
  {
    ...QUIET,
    additionalProperties: true,
    examples: [
      {
        mac_address: "02:AB:00:00:00:01",
        product_name: "edge-gateway",
        metadata: { hostname: "pump7", ip_address: "192.0.2.10", name: "pump-station-7" },
        labels: { site: "berlin", "hw.rev": "b2" },
        device_secret: "x3Jq1v8Zr0mYkP2tA7cN5wE9uH4sL6dB0fG1hK3jM5n",
      },
    ],
  },
);
export type RegistrationBody = Static<typeof RegistrationBody>;

/** `POST /api/v1/devices/approval` (operators). */
export const ApprovalBody = Type.Object(
  {
    ids: Type.Array(Type.String(), { message: "must be a list of device ids" }),
    approval_status: Type.Union([Type.Literal("approved"), Type.Literal("rejected")], {
      message: "must be approved or rejected",
    }),
  },
  {
    ...QUIET,
    additionalProperties: true,
    examples: [{ ids: ["0193a1b2-0000-7000-8000-000000000001"], approval_status: "approved" }],
  },
);
export type ApprovalBody = Static<typeof ApprovalBody>;

/** `POST /api/v1/devices/approval` → 200: the devices whose status changed. */
export const ApprovalReply = Type.Object({
  data: Type.Object({ changed_ids: Type.Array(Type.String()), changed_count: Type.Integer() }),
});

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
  /** The labels the device's agent declares (operators' tags: `GET /api/v1/devices/{id}/tags`). */
  labels: Type.Record(Type.String(), Type.String()),
  /** The name shown: operators' display name, else the reported name, else derived from the MAC. */
  name: Type.String(),
  display_name: Nullable(Type.String()),
  notes: Nullable(Type.String()),
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
    labels: device.labels,
    name: device.name,
    display_name: device.displayName,
    notes: device.notes,
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

/** `GET /api/v1/devices`: filters (an unknown filter value filters nothing), order and a keyset page. */
export const DeviceListQuery = Type.Object(
  {
    approval_status: Type.Optional(Type.String({ description: "pending, approved or rejected" })),
    connectivity_status: Type.Optional(Type.String({ description: "online or offline" })),
    remote_access_requested: Type.Optional(Type.String({ description: "true or false" })),
    product: Type.Optional(Type.String({ description: "Exact product name" })),
    search: Type.Optional(Type.String({ description: "Part of the MAC address, product or metadata name" })),
    q: Type.Optional(
      Type.String({
        maxLength: 1000,
        description: 'A query: `tag:site=berlin status:online -tag:env=lab "text"` (docs/fleet.md)',
      }),
    ),
    view: Type.Optional(Type.String({ description: "A saved view, by id or name (its query applies)" })),
    sort: Type.Optional(literalUnion(DEVICE_SORTS, { message: `must be one of ${DEVICE_SORTS.join(", ")}` })),
    order: Type.Optional(
      Type.Union([Type.Literal("asc"), Type.Literal("desc")], { message: "must be asc or desc" }),
    ),
    limit: Type.Optional(
      Type.String({
        pattern: "^(500|[1-4][0-9]{2}|[1-9][0-9]?)$",
        message: "must be an integer from 1 to 500",
      }),
    ),
    cursor: Type.Optional(Type.String({ description: "`meta.next_cursor` of the page before" })),
  },
  { additionalProperties: true },
);

/** `GET /api/v1/devices` → 200. */
export const DeviceListReply = Type.Object({
  data: Type.Array(DeviceJsonSchema),
  meta: Type.Object({
    active_filters: Type.Record(Type.String(), Type.String()),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  }),
});

/** The device list page's state (`/devices`): filters, order and a page cursor, all optional text. */
export const DevicePageQuery = Type.Object(
  {
    search: Type.Optional(FormText(1000)),
    /** A fleet query and a saved view (docs/fleet.md). */
    q: Type.Optional(FormText(1000)),
    view: Type.Optional(FormText(200)),
    approval_status: Type.Optional(FormText(40)),
    connectivity_status: Type.Optional(FormText(40)),
    product: Type.Optional(FormText(1000)),
    sort: Type.Optional(FormText(40)),
    order: Type.Optional(FormText(10)),
    after: Type.Optional(FormText(1000)),
    before: Type.Optional(FormText(1000)),
  },
  { additionalProperties: true },
);

/** The device list's bulk approve/reject: the chosen ids (checkboxes, or one comma-separated list). */
export const BulkDecisionForm = ConsoleForm({
  action: Type.Optional(FormText(20)),
  ids: Type.Optional(FormList(10_000)),
  return_to: Type.Optional(FormText(2000)),
});

/** Add device (`/devices/new`): a MAC address, its product and name, approved now or not. */
export const NewDeviceForm = ConsoleForm({
  mac_address: Type.Optional(FormText(200)),
  product_name: Type.Optional(FormText(1000)),
  name: Type.Optional(FormText(1000)),
  approved: Type.Optional(FormText(10)),
});

// ---------------------------------------------------------------- the JSON:API device resource (jsonapi.ts)

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

/** `GET /api/json/devices`. */
export const DeviceResourceListQuery = Type.Object(
  {
    "filter[approval_status]": Type.Optional(Type.String({ description: "pending, approved or rejected" })),
    "filter[connectivity_status]": Type.Optional(Type.String({ description: "online or offline" })),
    "filter[product]": Type.Optional(Type.String({ description: "Exact product name" })),
    "filter[search]": Type.Optional(Type.String({ description: "Part of the MAC address, product or name" })),
    "filter[q]": Type.Optional(
      Type.String({
        description:
          "A fleet query (docs/fleet.md): `tag:site=berlin status:online -tag:env=lab`; 400 invalid_query points at a bad token",
      }),
    ),
    "filter[view]": Type.Optional(
      Type.String({ description: "A saved view's id or name: its devices (and filter[q]'s)" }),
    ),
    sort: Type.Optional(Type.String({ description: "A device sort, `-` before it for descending" })),
    ...pageQuery(500),
  },
  { additionalProperties: true },
);

/**
 * The `device` resource: the device's fields (with `labels`, its agent's) and `tags`, its operators'
 * tags (docs/fleet.md): a query's `tag:` matches both.
 */
export const DeviceResource = resourceSchema(
  "device",
  Type.Composite([
    Type.Omit(DeviceJsonSchema, ["id"]),
    Type.Object({
      tags: Type.Array(Type.Object({ key: Type.String(), value: Type.String() }), {
        description: "Operators' tags (set in the console or the API); `labels` are the agent's",
      }),
    }),
  ]),
);
export const DeviceListDocument = listDocument(
  DeviceResource,
  Type.Object({ active_filters: Type.Record(Type.String(), Type.String()) }),
);
export const DeviceDocument = oneDocument(DeviceResource);
export const DeviceWriteDocument = writeDocument("device", DeviceAttributes);
