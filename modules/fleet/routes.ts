import { Elysia, type TSchema } from "elysia";
import { noteAudit, noteChanges } from "../audit/service";
import { getDevice } from "../devices/service";
import { principalLabel } from "../platform/access";
import type { AppContext } from "../platform/context";
import { notFound } from "../platform/errors";
import { readJsonBody } from "../platform/json-body";
import { DeviceParams, errorReplies, NoContent } from "../platform/schemas";
import {
  BulkTagsBody,
  BulkTagsReply,
  DeviceTagsReply,
  ProfileBody,
  ProfileReply,
  SetTagsBody,
  SuggestionsQuery,
  SuggestionsReply,
  TagKeyParams,
  ViewBody,
  ViewListReply,
  ViewParams,
  ViewReply,
  viewJson,
} from "./model";
import {
  addTags,
  createView,
  deleteView,
  deviceTagsOf,
  getView,
  listViews,
  removeTags,
  setProfile,
  tagSuggestions,
  updateView,
} from "./service";

const BODY_MAX = 64 * 1024;

/** The fleet API: tags, display names and notes, saved views (docs/fleet.md). Viewers read; operators write. */
export function fleetApiRoutes(ctx: AppContext) {
  const { database } = ctx;
  const sql = database.sql;
  const usersOf = async (viewId: string) => (await ctx.viewUsers?.(viewId)) ?? [];
  const parse = ({ request }: { request: Request }) => readJsonBody(request, BODY_MAX);
  /** An operator's JSON write: its body read within BODY_MAX (a larger one: 413) and checked against `body`. */
  const jsonWrite = <Body extends TSchema>(summary: string, body: Body) => ({
    access: "operator" as const,
    detail: { summary },
    parse,
    body,
  });

  async function requireDevice(id: string) {
    const device = await getDevice(sql, id, { onlineWindowSeconds: 0 });
    if (!device) throw notFound("No device with this id", "device_not_found");
    return device;
  }

  async function tagsReply(id: string) {
    const device = await requireDevice(id);
    return { data: { tags: await deviceTagsOf(sql, device.id), labels: device.labels } };
  }

  return new Elysia({ name: "fleet-api" })
    .use(ctx.access)
    .get("/api/v1/devices/:device_id/tags", ({ params }) => tagsReply(params.device_id), {
      access: "viewer",
      detail: { summary: "A device's tags (operators') and labels (declared by its agent)" },
      params: DeviceParams,
      response: { 200: DeviceTagsReply, ...errorReplies(401, 403, 404) },
    })
    .post(
      "/api/v1/devices/:device_id/tags",
      async ({ params, body, request }) => {
        const device = await requireDevice(params.device_id);
        await addTags(sql, [device.id], body.tags);
        noteAudit(request, { details: { tags: body.tags.map((t) => `${t.key}=${t.value}`) } });
        return tagsReply(device.id);
      },
      {
        ...jsonWrite("Set tags on a device (a key it has takes the new value)", SetTagsBody),
        params: DeviceParams,
        response: { 200: DeviceTagsReply, ...errorReplies(400, 401, 403, 404, 409, 413) },
      },
    )
    .delete(
      "/api/v1/devices/:device_id/tags/:key",
      async ({ params, set, request }) => {
        const device = await requireDevice(params.device_id);
        await removeTags(sql, [device.id], [params.key]);
        noteAudit(request, { details: { remove: [params.key] } });
        set.status = 204;
        return "" as const;
      },
      {
        access: "operator",
        detail: { summary: "Remove a tag from a device (nothing to remove is no error)" },
        params: TagKeyParams,
        response: { 204: NoContent, ...errorReplies(401, 403, 404, 409) },
      },
    )
    .post(
      "/api/v1/devices/tags",
      async ({ body, request }) => {
        const changed = body.add?.length ? await addTags(sql, body.ids, body.add) : [];
        const removed = body.remove?.length ? await removeTags(sql, body.ids, body.remove) : 0;
        noteAudit(request, {
          details: {
            changed_ids: changed.slice(0, 20),
            device_count: body.ids.length,
            add: body.add?.map((t) => `${t.key}=${t.value}`),
            remove: body.remove,
          },
        });
        return { data: { changed_ids: changed, removed_count: removed } };
      },
      {
        ...jsonWrite("Add and/or remove tags on many devices at once", BulkTagsBody),
        response: { 200: BulkTagsReply, ...errorReplies(400, 401, 403, 409, 413) },
      },
    )
    .patch(
      "/api/v1/devices/:device_id/profile",
      async ({ params, body, request }) => {
        const before = await setProfile(sql, params.device_id, {
          displayName: body.display_name,
          notes: body.notes,
        });
        if (!before) throw notFound("No device with this id", "device_not_found");
        const device = await requireDevice(params.device_id);
        noteChanges(
          request,
          { display_name: before.displayName, notes: before.notes },
          { display_name: device.displayName, notes: device.notes },
        );
        return {
          data: { id: device.id, name: device.name, display_name: device.displayName, notes: device.notes },
        };
      },
      {
        ...jsonWrite("Set a device's display name and notes", ProfileBody),
        params: DeviceParams,
        response: { 200: ProfileReply, ...errorReplies(400, 401, 403, 404, 413) },
      },
    )
    .get(
      "/api/v1/tags/suggestions",
      async ({ query }) => ({ data: await tagSuggestions(sql, { key: query.key, prefix: query.prefix }) }),
      {
        access: "viewer",
        detail: { summary: "Tag keys (or one key's values) starting with a prefix, for search boxes" },
        query: SuggestionsQuery,
        response: { 200: SuggestionsReply, ...errorReplies(400, 401, 403) },
      },
    )
    .get("/api/v1/views", async () => ({ data: (await listViews(database)).map(viewJson) }), {
      access: "viewer",
      detail: { summary: "Saved views (named device queries shared by the team)" },
      response: { 200: ViewListReply, ...errorReplies(401, 403) },
    })
    .post(
      "/api/v1/views",
      async ({ body, request, principal, set }) => {
        const view = await createView(database, body, principalLabel(principal) ?? "unknown");
        noteAudit(request, { target: `view:${view.id}`, details: { name: view.name, query: view.query } });
        set.status = 201;
        return { data: viewJson(view) };
      },
      {
        ...jsonWrite("Save a view", ViewBody),
        response: { 201: ViewReply, ...errorReplies(400, 401, 403, 409, 413) },
      },
    )
    .get(
      "/api/v1/views/:view_id",
      async ({ params }) => ({ data: viewJson(await getView(database, params.view_id)) }),
      {
        access: "viewer",
        detail: { summary: "One saved view (by id or name); its devices: GET /api/v1/devices?view=" },
        params: ViewParams,
        response: { 200: ViewReply, ...errorReplies(401, 403, 404) },
      },
    )
    .put(
      "/api/v1/views/:view_id",
      async ({ params, body, request }) => {
        const before = await getView(database, params.view_id);
        const view = await updateView(database, before.id, body);
        noteChanges(
          request,
          { name: before.name, query: before.query },
          { name: view.name, query: view.query },
        );
        return { data: viewJson(view) };
      },
      {
        ...jsonWrite("Rename a view or change its query", ViewBody),
        params: ViewParams,
        response: { 200: ViewReply, ...errorReplies(400, 401, 403, 404, 409, 413) },
      },
    )
    .delete(
      "/api/v1/views/:view_id",
      async ({ params, request, set }) => {
        const view = await deleteView(database, (await getView(database, params.view_id)).id, usersOf);
        noteAudit(request, { details: { name: view.name, query: view.query } });
        set.status = 204;
        return "" as const;
      },
      {
        access: "operator",
        detail: { summary: "Delete a saved view" },
        params: ViewParams,
        response: { 204: NoContent, ...errorReplies(401, 403, 404, 409) },
      },
    );
}
