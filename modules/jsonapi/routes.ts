import { Elysia } from "elysia";
import { approvalAction, noteAudit, noteChanges } from "../audit/service";
import { commandJson } from "../commands/model";
import {
  type CommandStatus,
  cancelCommand,
  getCommand,
  listCommands,
  queueCommand,
} from "../commands/service";
import { deviceJson } from "../devices/model";
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
} from "../devices/service";
import type { AppContext } from "../platform/context";
import { AppError, badRequest } from "../platform/errors";
import type { HttpErrorMapper } from "../platform/http";
import { isPlainObject, readJsonBody } from "../platform/json-body";
import { jsonApiErrorReplies, NoContent } from "../platform/schemas";
import { endDeviceLeases } from "../remote-access/service";
import { getTelemetryEvent, listTelemetryEvents, type TelemetryEvent } from "../telemetry/service";
import {
  actorLabel,
  JSONAPI_MEDIA_TYPE,
  JSONAPI_PREFIX,
  jsonApiDocument,
  jsonApiPageSize,
  jsonApiQuery,
} from "./document";
import {
  CommandCreateDocument,
  CommandDocument,
  CommandListDocument,
  CommandListQuery,
  DeviceDocument,
  DeviceListDocument,
  DeviceListQuery,
  DeviceWriteDocument,
  ResourceIdParams,
  TelemetryDocument,
  TelemetryListDocument,
  TelemetryListQuery,
} from "./model";

const BODY_MAX_BYTES = 1024 * 1024 + 64 * 1024;

/** Errors under /api/json as JSON:API error documents: `{errors:[{status, code, title, detail}]}`. */
export const jsonApiErrorMapper: HttpErrorMapper = (error, request) => {
  const { pathname } = new URL(request.url);
  if (pathname !== JSONAPI_PREFIX && !pathname.startsWith(`${JSONAPI_PREFIX}/`)) return undefined;
  const detail =
    error.status === 403 && error.code === "forbidden"
      ? "JSON:API access is forbidden for your role"
      : error.message;
  const entry: Record<string, unknown> = {
    status: String(error.status),
    code: error.code,
    title: error.message,
    detail,
  };
  const field =
    isPlainObject(error.details) && typeof error.details.field === "string" ? error.details.field : undefined;
  if (field) entry.source = { parameter: field };
  if (error.details !== undefined) entry.meta = error.details;
  return new Response(JSON.stringify({ errors: [entry] }), {
    status: error.status,
    headers: { "content-type": JSONAPI_MEDIA_TYPE, ...(error.headers ?? {}) },
  });
};

function nextLink(request: Request, cursor: string | undefined): string | null {
  if (!cursor) return null;
  const url = new URL(request.url);
  url.searchParams.set("page[after]", cursor);
  return `${url.pathname}${url.search}`;
}

function timeParam(params: URLSearchParams, name: string): Date | undefined {
  const raw = params.get(name);
  if (raw === null || raw === "") return undefined;
  const value = new Date(raw);
  if (Number.isNaN(value.getTime())) throw badRequest(`${name} must be an ISO 8601 time`, { field: name });
  return value;
}

type DeviceView = ReturnType<typeof deviceJson>;

function deviceResource(device: DeviceView) {
  const { id, ...attributes } = device;
  return { type: "device", id, attributes, links: { self: `${JSONAPI_PREFIX}/devices/${id}` } };
}

function commandResource(command: ReturnType<typeof commandJson>) {
  const { id, device_id: deviceId, ...attributes } = command;
  return {
    type: "pending_command",
    id,
    attributes: { ...attributes, device_id: deviceId },
    relationships: { device: { data: { type: "device", id: deviceId } } },
    links: { self: `${JSONAPI_PREFIX}/pending_commands/${id}` },
  };
}

function telemetryResource(event: TelemetryEvent) {
  return {
    type: "telemetry_event",
    id: event.id,
    attributes: {
      device_id: event.deviceId,
      recorded_at: event.recordedAt.toISOString(),
      payload: event.payload,
    },
    relationships: { device: { data: { type: "device", id: event.deviceId } } },
    links: { self: `${JSONAPI_PREFIX}/telemetry_events/${event.id}` },
  };
}

function parseSort(raw: string | null): { sort?: DeviceSort; order?: "asc" | "desc" } {
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

/** The JSON:API surface: devices, pending_commands, telemetry_events. Later modules add theirs. */
export function jsonApiRoutes(ctx: AppContext) {
  const { database } = ctx;
  const sql = database.sql;
  const parse = ({ request }: { request: Request }) => readJsonBody(request, BODY_MAX_BYTES);

  const deviceOrThrow = async (id: string) => {
    const settings = await ctx.settings.device();
    const device = await getDevice(sql, id, settings);
    if (!device) throw new AppError(404, "not_found", "Device not found");
    return device;
  };

  return new Elysia({ name: "jsonapi", prefix: JSONAPI_PREFIX })
    .use(ctx.access)
    .get(
      "/devices",
      async ({ request }) => {
        const params = jsonApiQuery(request);
        const settings = await ctx.settings.device();
        const filters = normaliseDeviceFilters({
          approval_status: params.get("filter[approval_status]") ?? undefined,
          connectivity_status: params.get("filter[connectivity_status]") ?? undefined,
          product: params.get("filter[product]") ?? undefined,
          search: params.get("filter[search]") ?? undefined,
        });
        const list = await listDevices(sql, {
          ...filters,
          ...parseSort(params.get("sort")),
          onlineWindowSeconds: settings.onlineWindowSeconds,
          limit: jsonApiPageSize(params),
          cursor: params.get("page[after]") || undefined,
        });
        return jsonApiDocument({
          data: list.devices.map((d) => deviceResource(deviceJson(d, { schema: false }))),
          meta: { active_filters: list.activeFilters },
          links: { next: nextLink(request, list.nextCursor) },
        });
      },
      {
        access: "viewer",
        detail: { summary: "List devices, filtered and sorted, a keyset page at a time" },
        query: DeviceListQuery,
        response: { 200: DeviceListDocument, ...jsonApiErrorReplies(400, 401, 403) },
      },
    )
    .get(
      "/devices/:id",
      async ({ params }) =>
        jsonApiDocument({ data: deviceResource(deviceJson(await deviceOrThrow(params.id))) }),
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
        // A revocation (approved → rejected) also closes the device's remote access.
        if (device.approvalStatus === "rejected") await endDeviceLeases(sql, device.id, "revoked");
        return jsonApiDocument({ data: deviceResource(deviceJson(device)) });
      },
      {
        access: "operator",
        detail: { summary: "Change a device's approval, product name or metadata" },
        params: ResourceIdParams,
        parse,
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
    )
    .get(
      "/pending_commands",
      async ({ request }) => {
        const params = jsonApiQuery(request);
        const list = await listCommands(sql, {
          deviceId: params.get("filter[device_id]") || undefined,
          status: (params.get("filter[status]") || undefined) as CommandStatus | undefined,
          limit: jsonApiPageSize(params),
          cursor: params.get("page[after]") || undefined,
        });
        return jsonApiDocument({
          data: list.commands.map((c) => commandResource(commandJson(c))),
          links: { next: nextLink(request, list.nextCursor) },
        });
      },
      {
        access: "viewer",
        detail: { summary: "List commands, newest first, a keyset page at a time" },
        query: CommandListQuery,
        response: { 200: CommandListDocument, ...jsonApiErrorReplies(400, 401, 403) },
      },
    )
    .get(
      "/pending_commands/:id",
      async ({ params }) => {
        const command = await getCommand(sql, params.id);
        if (!command) throw new AppError(404, "not_found", "Command not found");
        return jsonApiDocument({ data: commandResource(commandJson(command)) });
      },
      {
        access: "viewer",
        detail: { summary: "One command" },
        params: ResourceIdParams,
        response: { 200: CommandDocument, ...jsonApiErrorReplies(401, 403, 404) },
      },
    )
    .post(
      "/pending_commands",
      async ({ body, principal, request }) => {
        const { attributes } = body.data;
        const relationships: Record<string, unknown> = body.data.relationships ?? {};
        const related =
          isPlainObject(relationships.device) && isPlainObject(relationships.device.data)
            ? relationships.device.data.id
            : undefined;
        const deviceId = related ?? attributes.device_id;
        if (typeof deviceId !== "string") {
          throw badRequest("The device is required (relationships.device or attributes.device_id)", {
            field: "device_id",
          });
        }
        const settings = await ctx.settings.device();
        const ttl = attributes.ttl_seconds ?? settings.commandTtlSeconds;
        const command = await queueCommand(sql, {
          deviceId,
          type: attributes.type,
          args: attributes.args,
          payload: attributes.payload,
          publicKey: attributes.public_key,
          ttlSeconds: ttl,
          queuedBy: actorLabel(principal),
        });
        noteAudit(request, {
          target: `command:${command.id}`,
          details: { type: command.type, device_id: command.deviceId },
        });
        return jsonApiDocument({ data: commandResource(commandJson(command)) }, 201);
      },
      {
        access: "operator",
        detail: { summary: "Queue a command for a device" },
        parse,
        body: CommandCreateDocument,
        response: { 201: CommandDocument, ...jsonApiErrorReplies(400, 401, 403, 404, 409, 413, 422) },
      },
    )
    .delete(
      "/pending_commands/:id",
      async ({ params, request }) => {
        const command = await getCommand(sql, params.id);
        if (command) noteAudit(request, { details: { type: command.type, device_id: command.deviceId } });
        const outcome = await cancelCommand(sql, params.id);
        if (outcome === "not_found") throw new AppError(404, "not_found", "Command not found");
        if (outcome === "not_queued") {
          throw new AppError(409, "command_not_queued", "Only a command that is still queued can be deleted");
        }
        return new Response(null, { status: 204 });
      },
      {
        access: "operator",
        detail: { summary: "Delete a command that is still queued" },
        params: ResourceIdParams,
        response: { 204: NoContent, ...jsonApiErrorReplies(401, 403, 404, 409) },
      },
    )
    .get(
      "/telemetry_events",
      async ({ request }) => {
        const params = jsonApiQuery(request);
        const list = await listTelemetryEvents(sql, {
          deviceId: params.get("filter[device_id]") || undefined,
          from: timeParam(params, "filter[from]"),
          to: timeParam(params, "filter[to]"),
          limit: jsonApiPageSize(params, 100, 1000),
          cursor: params.get("page[after]") || undefined,
        });
        return jsonApiDocument({
          data: list.events.map(telemetryResource),
          links: { next: nextLink(request, list.nextCursor) },
        });
      },
      {
        access: "viewer",
        detail: { summary: "List telemetry events, newest first, a keyset page at a time" },
        query: TelemetryListQuery,
        response: { 200: TelemetryListDocument, ...jsonApiErrorReplies(400, 401, 403) },
      },
    )
    .get(
      "/telemetry_events/:id",
      async ({ params }) => {
        const event = await getTelemetryEvent(sql, params.id);
        if (!event) throw new AppError(404, "not_found", "Telemetry event not found");
        return jsonApiDocument({ data: telemetryResource(event) });
      },
      {
        access: "viewer",
        detail: { summary: "One telemetry event" },
        params: ResourceIdParams,
        response: { 200: TelemetryDocument, ...jsonApiErrorReplies(401, 403, 404) },
      },
    );
}
