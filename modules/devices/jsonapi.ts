import { Elysia } from "elysia";
import { approvalAction, noteAudit, noteChanges } from "../audit/service";
import { JSONAPI_PREFIX, jsonApiDocument, jsonApiNextLink, jsonApiPageSize } from "../jsonapi";
import { ResourceIdParams } from "../jsonapi/model";
import type { AppContext } from "../platform/context";
import type { Sql } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { readJsonBody } from "../platform/json-body";
import { jsonApiErrorReplies, NoContent } from "../platform/schemas";
import {
  DeviceDocument,
  DeviceListDocument,
  DeviceResourceListQuery,
  DeviceWriteDocument,
  deviceJson,
} from "./model";
import {
  type ApprovalStatus,
  DEVICE_SORTS,
  type DeviceSort,
  deleteDevice,
  editableFields,
  getDevice,
  listDevices,
  normaliseDeviceFilters,
  updateDevice,
} from "./service";

const BODY_MAX_BYTES = 1024 * 1024 + 64 * 1024;

type DeviceView = ReturnType<typeof deviceJson>;

function deviceResource(device: DeviceView, tags: Map<string, { key: string; value: string }[]>) {
  const { id, ...attributes } = device;
  return {
    type: "device",
    id,
    attributes: { ...attributes, tags: tags.get(id) ?? [] },
    links: { self: `${JSONAPI_PREFIX}/devices/${id}` },
  };
}

function parseSort(raw: string | undefined): { sort?: DeviceSort; order?: "asc" | "desc" } {
  if (!raw) return {};
  const desc = raw.startsWith("-");
  const field = desc ? raw.slice(1) : raw;
  if (!(DEVICE_SORTS as readonly string[]).includes(field)) {
    throw badRequest(`sort must be one of ${DEVICE_SORTS.join(", ")} (prefix - for descending)`, {
      field: "sort",
    });
  }
  return { sort: field as DeviceSort, order: desc ? "desc" : "asc" };
}

export interface DeviceResourceHooks {
  /** A device was rejected (a revocation): what else it had must end (its remote access, app.ts). */
  onRejected(sql: Sql, deviceId: string): Promise<unknown>;
}

/** The JSON:API `device` resource: list, read, change, delete. */
export function deviceJsonApiRoutes(ctx: AppContext, hooks: DeviceResourceHooks) {
  const { database } = ctx;
  const sql = database.sql;

  const tagsOf = async (ids: string[]) => (await ctx.deviceTags?.(ids)) ?? new Map();
  const resourceOf = async (device: Parameters<typeof deviceJson>[0]) =>
    deviceResource(deviceJson(device), await tagsOf([device.id]));

  const deviceOrThrow = async (id: string) => {
    const settings = await ctx.settings.device();
    const device = await getDevice(sql, id, settings);
    if (!device) throw new AppError(404, "not_found", "Device not found");
    return device;
  };

  return new Elysia({ name: "devices-jsonapi", prefix: JSONAPI_PREFIX })
    .use(ctx.access)
    .get(
      "/devices",
      async ({ query, request }) => {
        const settings = await ctx.settings.device();
        const filters = normaliseDeviceFilters({
          approval_status: query["filter[approval_status]"],
          connectivity_status: query["filter[connectivity_status]"],
          product: query["filter[product]"],
          search: query["filter[search]"],
        });
        const match = await ctx
          .deviceQuery?.({ q: query["filter[q]"], view: query["filter[view]"] }, settings.onlineWindowSeconds)
          .catch((error: unknown) => {
            // The query's place in this API is filter[q].
            const details = error instanceof AppError ? (error.details as { field?: string }) : undefined;
            if (error instanceof AppError && error.code === "invalid_query" && details?.field === "q")
              throw new AppError(400, "invalid_query", error.message, { ...details, field: "filter[q]" });
            throw error;
          });
        const list = await listDevices(sql, {
          ...filters,
          matching: match?.condition,
          ...parseSort(query.sort),
          onlineWindowSeconds: settings.onlineWindowSeconds,
          limit: jsonApiPageSize(query),
          cursor: query["page[after]"] || undefined,
        });
        const tags = await tagsOf(list.devices.map((d) => d.id));
        return jsonApiDocument({
          data: list.devices.map((d) => deviceResource(deviceJson(d, { schema: false }), tags)),
          meta: { active_filters: list.activeFilters },
          links: { next: jsonApiNextLink(request, list.nextCursor) },
        });
      },
      {
        access: "viewer",
        detail: { summary: "List devices, filtered and sorted, a keyset page at a time" },
        query: DeviceResourceListQuery,
        response: { 200: DeviceListDocument, ...jsonApiErrorReplies(400, 401, 403, 404) },
      },
    )
    .get(
      "/devices/:id",
      async ({ params }) => jsonApiDocument({ data: await resourceOf(await deviceOrThrow(params.id)) }),
      {
        access: "viewer",
        detail: { summary: "One device" },
        params: ResourceIdParams,
        response: { 200: DeviceDocument, ...jsonApiErrorReplies(401, 403, 404) },
      },
    )
    .patch(
      "/devices/:id",
      async ({ params, body, request }) => {
        const { id, attributes = {} } = body.data;
        if (id !== undefined && id !== params.id)
          throw new AppError(409, "id_mismatch", "data.id does not match the URL");
        const settings = await ctx.settings.device();
        const before = await getDevice(sql, params.id, settings);
        const device = await updateDevice(
          sql,
          params.id,
          {
            approvalStatus: attributes.approval_status as ApprovalStatus | undefined,
            productName: attributes.product_name as string | null | undefined,
            metadata: attributes.metadata,
          },
          settings,
        );
        if (!device || !before) throw new AppError(404, "not_found", "Device not found");
        noteChanges(request, editableFields(before), editableFields(device), {
          action: approvalAction(before.approvalStatus, device.approvalStatus),
        });
        if (device.approvalStatus === "rejected") await hooks.onRejected(sql, device.id);
        return jsonApiDocument({ data: await resourceOf(device) });
      },
      {
        access: "operator",
        detail: { summary: "Change a device's approval, product name or metadata" },
        params: ResourceIdParams,
        parse: ({ request }) => readJsonBody(request, BODY_MAX_BYTES),
        body: DeviceWriteDocument,
        response: { 200: DeviceDocument, ...jsonApiErrorReplies(400, 401, 403, 404, 409, 413) },
      },
    )
    .delete(
      "/devices/:id",
      async ({ params, request }) => {
        const device = await getDevice(sql, params.id, await ctx.settings.device());
        if (!device || !(await deleteDevice(sql, params.id)))
          throw new AppError(404, "not_found", "Device not found");
        noteAudit(request, { details: { mac_address: device.macAddress, name: device.name } });
        return new Response(null, { status: 204 });
      },
      {
        access: "operator",
        detail: { summary: "Delete a device and everything it reported" },
        params: ResourceIdParams,
        response: { 204: NoContent, ...jsonApiErrorReplies(401, 403, 404) },
      },
    );
}
