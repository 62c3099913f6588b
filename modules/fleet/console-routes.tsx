import { Elysia } from "elysia";
import { consolePages } from "../../ui/page";
import { noteAudit, noteChanges } from "../audit/service";
import { devicesReturn } from "../devices/service";
import { canOperate, principalLabel } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { formList } from "../platform/schemas";
import {
  BulkTagForm,
  DevicePagePath,
  ProfileForm,
  RemoveTagForm,
  TagForm,
  ViewButtonForm,
  ViewForm,
  ViewParams,
} from "./model";
import { ViewsPage } from "./pages/views";
import {
  addTags,
  createView,
  deleteView,
  findView,
  listViews,
  removeTags,
  setProfile,
  TAG_BATCH_MAX,
  tagFromText,
  updateView,
} from "./service";

/**
 * The fleet's console forms: tags, name and notes on the device page, bulk tagging from the device
 * list's selection, and the saved views page (docs/fleet.md). Errors come back as a flash.
 */
export function fleetConsoleRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const { database } = ctx;
  const sql = database.sql;
  const usersOf = async (viewId: string) => (await ctx.viewUsers?.(viewId)) ?? [];

  /** Runs a form's change; a refusal (400, 404, 409) is shown as an error flash at `back`. */
  async function attempt(back: string, change: () => Promise<string>) {
    try {
      return redirectWithFlash(back, { kind: "success", text: await change() });
    } catch (error) {
      if (error instanceof AppError && error.status < 500)
        return redirectWithFlash(back, { kind: "error", text: error.message });
      throw error;
    }
  }

  return new Elysia({ name: "fleet-console" })
    .use(ctx.access)
    .post(
      "/devices/bulk-tags",
      async ({ body, request }) => {
        const back = devicesReturn(body.return_to);
        const ids = formList(body.ids)
          .flatMap((id) => id.split(","))
          .filter((id) => id.trim() !== "");
        const tag = tagFromText(body.tag ?? "");
        const action = body.action ?? "";
        if (ids.length === 0)
          return redirectWithFlash(back, { kind: "error", text: "Select at least one device first." });
        if (ids.length > TAG_BATCH_MAX)
          return redirectWithFlash(back, { kind: "error", text: `Select at most ${TAG_BATCH_MAX} devices.` });
        if (tag.key === "")
          return redirectWithFlash(back, { kind: "error", text: "Type the tag as key=value first." });
        return attempt(back, async () => {
          if (action === "remove-tag") {
            const removed = await removeTags(sql, ids, [tag.key]);
            noteAudit(request, { details: { remove: [tag.key], device_count: ids.length } });
            return `Tag ${tag.key} removed from ${removed} ${removed === 1 ? "device" : "devices"}.`;
          }
          const changed = await addTags(sql, ids, [tag]);
          noteAudit(request, {
            details: {
              add: [`${tag.key}=${tag.value}`],
              changed_ids: changed.slice(0, 20),
              device_count: ids.length,
            },
          });
          return `Tag ${tag.key}=${tag.value} set on ${changed.length} ${changed.length === 1 ? "device" : "devices"}.`;
        });
      },
      { access: "operator", body: BulkTagForm },
    )
    .post(
      "/devices/:id/tags",
      async ({ params, body, request }) => {
        const tag = tagFromText(body.tag ?? "");
        const back = `/devices/${encodeURIComponent(params.id)}?tab=tags`;
        return attempt(back, async () => {
          const changed = await addTags(sql, [params.id], [tag]);
          if (changed.length === 0)
            throw new AppError(404, "device_not_found", "This device does not exist.");
          noteAudit(request, { details: { add: [`${tag.key}=${tag.value}`] } });
          return `Tag ${tag.key} set.`;
        });
      },
      { access: "operator", params: DevicePagePath, body: TagForm },
    )
    .post(
      "/devices/:id/tags/remove",
      async ({ params, body, request }) => {
        const key = body.key ?? "";
        const back = `/devices/${encodeURIComponent(params.id)}?tab=tags`;
        return attempt(back, async () => {
          await removeTags(sql, [params.id], [key]);
          noteAudit(request, { details: { remove: [key] } });
          return `Tag ${key} removed.`;
        });
      },
      { access: "operator", params: DevicePagePath, body: RemoveTagForm },
    )
    .post(
      "/devices/:id/profile",
      async ({ params, body, request }) => {
        const back = `/devices/${encodeURIComponent(params.id)}?tab=tags`;
        return attempt(back, async () => {
          const next = { displayName: body.display_name ?? "", notes: body.notes ?? "" };
          const before = await setProfile(sql, params.id, next);
          if (!before) throw new AppError(404, "device_not_found", "This device does not exist.");
          noteChanges(
            request,
            { display_name: before.displayName, notes: before.notes },
            { display_name: next.displayName.trim() || null, notes: next.notes.trim() || null },
          );
          return "Name and notes saved.";
        });
      },
      { access: "operator", params: DevicePagePath, body: ProfileForm },
    )
    .get(
      "/views",
      async ({ request, principal }) => {
        const page = pageContext(request, principal);
        const views = await listViews(database);
        return htmlPage(page, <ViewsPage ctx={page} props={{ views, canManage: canOperate(principal) }} />);
      },
      { access: "viewer" },
    )
    .post(
      "/views",
      async ({ body, request, principal }) => {
        const input = { name: body.name ?? "", query: body.query ?? "" };
        try {
          const view = await createView(database, input, principalLabel(principal) ?? "unknown");
          noteAudit(request, { target: `view:${view.id}`, details: { name: view.name, query: view.query } });
          return redirectWithFlash(`/devices?view=${view.id}`, {
            kind: "success",
            text: `View "${view.name}" saved.`,
          });
        } catch (error) {
          if (error instanceof AppError && error.status < 500)
            return redirectWithFlash("/views", { kind: "error", text: error.message });
          throw error;
        }
      },
      { access: "operator", body: ViewForm },
    )
    .post(
      "/views/:view_id",
      async ({ params, body, request }) => {
        return attempt("/views", async () => {
          const before = await findView(database, params.view_id);
          const view = await updateView(database, params.view_id, {
            name: body.name ?? "",
            query: body.query ?? "",
          });
          noteChanges(
            request,
            { name: before?.name, query: before?.query },
            { name: view.name, query: view.query },
          );
          return `View "${view.name}" saved.`;
        });
      },
      { access: "operator", params: ViewParams, body: ViewForm },
    )
    .post(
      "/views/:view_id/delete",
      async ({ params, request }) =>
        attempt("/views", async () => {
          const view = await deleteView(database, params.view_id, usersOf);
          noteAudit(request, { details: { name: view.name, query: view.query } });
          return `View "${view.name}" deleted.`;
        }),
      { access: "operator", params: ViewParams, body: ViewButtonForm },
    );
}
