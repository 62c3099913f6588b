// Wire schemas of the fleet API (docs/fleet.md), with the types derived from them.
import { type Static, Type } from "@sinclair/typebox";
import { LABEL_KEY_PATTERN, LABEL_VALUE_MAX, LABELS_PER_DEVICE_MAX } from "../../shared/labels";
import { DEVICE_NAME_MAX, DEVICE_NOTES_MAX } from "../devices/service";
import { ButtonForm, ConsoleForm, FormList, FormText, QUIET } from "../platform/schemas";
import { QUERY_MAX_LENGTH } from "./query/parse";
import { TAG_BATCH_MAX } from "./tags";
import type { SavedView } from "./views";
import { VIEW_NAME_MAX } from "./views";

const TagKey = Type.String({ pattern: LABEL_KEY_PATTERN, description: "Lower-case, 1 to 63 characters" });

export const TagSchema = Type.Object({
  key: TagKey,
  value: Type.String({ maxLength: LABEL_VALUE_MAX, description: "Printable ASCII, may be empty" }),
});

/** Body of `POST /api/v1/devices/{device_id}/tags`: tags to set (a key it has takes the new value). */
export const SetTagsBody = Type.Object(
  { tags: Type.Array(TagSchema, { minItems: 1, maxItems: LABELS_PER_DEVICE_MAX }) },
  { ...QUIET, examples: [{ tags: [{ key: "site", value: "berlin" }] }] },
);

/** A device's tags: operators' (editable) and its agent's labels (declared by the device). */
export const DeviceTagsReply = Type.Object(
  {
    data: Type.Object({
      tags: Type.Array(TagSchema),
      labels: Type.Record(Type.String(), Type.String()),
    }),
  },
  { examples: [{ data: { tags: [{ key: "site", value: "berlin" }], labels: { rack: "r7" } } }] },
);

export const TagKeyParams = Type.Object({
  device_id: Type.String({ description: "The device's id (UUID)" }),
  key: Type.String({ description: "The tag's key" }),
});

/** Body of `POST /api/v1/devices/tags`: add and/or remove tags on many devices at once. */
export const BulkTagsBody = Type.Object(
  {
    ids: Type.Array(Type.String(), { minItems: 1, maxItems: TAG_BATCH_MAX }),
    add: Type.Optional(Type.Array(TagSchema, { maxItems: LABELS_PER_DEVICE_MAX })),
    remove: Type.Optional(Type.Array(Type.String(), { maxItems: LABELS_PER_DEVICE_MAX })),
  },
  {
    ...QUIET,
    examples: [{ ids: ["0193a1b2-0000-7000-8000-000000000001"], add: [{ key: "env", value: "lab" }] }],
  },
);

export const BulkTagsReply = Type.Object({
  data: Type.Object({
    changed_ids: Type.Array(Type.String()),
    removed_count: Type.Integer(),
  }),
});

/** Body of `PATCH /api/v1/devices/{device_id}/profile`: an absent field is unchanged, null or "" clears it. */
export const ProfileBody = Type.Object(
  {
    display_name: Type.Optional(Type.Union([Type.String({ maxLength: DEVICE_NAME_MAX }), Type.Null()])),
    notes: Type.Optional(Type.Union([Type.String({ maxLength: DEVICE_NOTES_MAX }), Type.Null()])),
  },
  { ...QUIET, examples: [{ display_name: "Pump station 7", notes: "Behind the blue door" }] },
);

export const ProfileReply = Type.Object({
  data: Type.Object({
    id: Type.String(),
    name: Type.String(),
    display_name: Type.Union([Type.String(), Type.Null()]),
    notes: Type.Union([Type.String(), Type.Null()]),
  }),
});

export const SuggestionsQuery = Type.Object(
  {
    key: Type.Optional(Type.String({ description: "Suggest this key's values (else: keys)" })),
    prefix: Type.Optional(Type.String({ maxLength: 128, description: "What the suggestions start with" })),
  },
  { additionalProperties: true },
);

export const SuggestionsReply = Type.Object({ data: Type.Array(Type.String()) });

export const ViewParams = Type.Object({ view_id: Type.String({ description: "The view's id (UUID)" }) });

export const ViewBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: VIEW_NAME_MAX }),
    query: Type.String({ maxLength: QUERY_MAX_LENGTH, description: "A query (docs/fleet.md)" }),
  },
  { ...QUIET, examples: [{ name: "Berlin gateways", query: "tag:site=berlin product:gateway" }] },
);

const ViewJson = Type.Object({
  id: Type.String({ format: "uuid" }),
  name: Type.String(),
  query: Type.String(),
  created_by: Type.String(),
  created_at: Type.String({ format: "date-time" }),
  updated_at: Type.String({ format: "date-time" }),
});

export const ViewReply = Type.Object({ data: ViewJson });
export const ViewListReply = Type.Object({ data: Type.Array(ViewJson) });

export function viewJson(view: SavedView): Static<typeof ViewJson> {
  return {
    id: view.id,
    name: view.name,
    query: view.query,
    created_by: view.createdBy,
    created_at: view.createdAt.toISOString(),
    updated_at: view.updatedAt.toISOString(),
  };
}

// ---- console forms (modules/fleet/console-routes.tsx)

/** A console path holding a device id (`/devices/:id/…`). */
export const DevicePagePath = Type.Object({ id: Type.String({ description: "The device's id (UUID)" }) });

/** The device list's bulk bar: `tag` (key=value) added to or removed from the ticked devices. */
export const BulkTagForm = ConsoleForm({
  action: Type.Optional(FormText(20)),
  tag: Type.Optional(FormText(400)),
  ids: Type.Optional(FormList(10_000)),
  return_to: Type.Optional(FormText(2000)),
});

/** The device page: add a tag (`key=value`), or remove one by key. */
export const TagForm = ConsoleForm({ tag: Type.Optional(FormText(400)) });
export const RemoveTagForm = ConsoleForm({ key: Type.Optional(FormText(100)) });

export const ProfileForm = ConsoleForm({
  display_name: Type.Optional(FormText(1000)),
  notes: Type.Optional(FormText(10_000)),
});

export const ViewForm = ConsoleForm({
  name: Type.Optional(FormText(1000)),
  query: Type.Optional(FormText(QUERY_MAX_LENGTH)),
});

export const ViewButtonForm = ButtonForm;
