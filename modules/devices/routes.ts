import { Elysia } from "elysia";
import { noteAudit } from "../audit/service";
import type { AppContext } from "../platform/context";
import { clientAddress } from "../platform/http";
import { readJsonBody } from "../platform/json-body";
import { errorReplies } from "../platform/schemas";
import {
  ApprovalBody,
  ApprovalReply,
  DeviceListQuery,
  DeviceListReply,
  deviceJson,
  RegistrationBody,
  RegistrationReply,
} from "./model";
import {
  consumeRateLimit,
  listDevices,
  normaliseDeviceFilters,
  registerDevice,
  setApprovalStatus,
} from "./service";

const REGISTER_MAX_BYTES = 128 * 1024;
const APPROVAL_MAX_BYTES = 64 * 1024;

/** The device API: registration (devices), the device list and bulk approval (operators). */
export function deviceRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  const sql = database.sql;

  return new Elysia({ name: "devices" })
    .use(ctx.access)
    .post(
      "/api/v1/devices/register",
      async ({ body, request, server, set }) => {
        const settings = await ctx.settings.device();
        const { device, apiToken } = await registerDevice(sql, body, {
          ...settings,
          address: clientAddress(request, server),
        });
        // The labels it declared become queryable tags before it is answered (an absent `labels` keeps them).
        if (body.labels !== undefined) await ctx.labelsDeclared?.(device.id, device.labels);
        set.status = 201;
        return { data: { ...deviceJson(device), ...(apiToken ? { api_token: apiToken } : {}) } };
      },
      {
        access: "public",
        detail: { summary: "Register a device (or re-register it); an approved device gets its API token" },
        // Public, so limited per client address (the TCP peer, as for sign-in), before any work.
        transform: ({ request, server }) =>
          consumeRateLimit(sql, {
            key: `register:${clientAddress(request, server)}`,
            limit: config.deviceRegisterRateLimit,
            what: "Registration",
          }),
        parse: ({ request }) => readJsonBody(request, REGISTER_MAX_BYTES),
        body: RegistrationBody,
        response: { 201: RegistrationReply, ...errorReplies(400, 401, 403, 409, 413, 422, 429) },
      },
    )
    .get(
      "/api/v1/devices",
      async ({ query }) => {
        const settings = await ctx.settings.device();
        const match = await ctx.deviceQuery?.({ q: query.q, view: query.view }, settings.onlineWindowSeconds);
        const list = await listDevices(sql, {
          ...normaliseDeviceFilters(query),
          matching: match?.condition,
          onlineWindowSeconds: settings.onlineWindowSeconds,
          sort: query.sort,
          order: query.order,
          limit: query.limit === undefined ? undefined : Number(query.limit),
          cursor: query.cursor || undefined,
        });
        return {
          data: list.devices.map((d) => deviceJson(d, { schema: false })),
          meta: {
            active_filters: {
              ...list.activeFilters,
              ...(query.q?.trim() ? { q: query.q.trim() } : {}),
              ...(match?.viewName ? { view: match.viewName } : {}),
            },
            next_cursor: list.nextCursor ?? null,
          },
        };
      },
      {
        access: "viewer",
        detail: { summary: "List devices, filtered and sorted, a keyset page at a time" },
        query: DeviceListQuery,
        response: { 200: DeviceListReply, ...errorReplies(400, 401, 403, 404) },
      },
    )
    .post(
      "/api/v1/devices/approval",
      async ({ body, request }) => {
        const changed = await setApprovalStatus(sql, body.ids, body.approval_status);
        noteAudit(request, { details: { changed_ids: changed } });
        return { data: { changed_ids: changed, changed_count: changed.length } };
      },
      {
        access: "operator",
        detail: { summary: "Approve or reject devices in bulk" },
        parse: ({ request }) => readJsonBody(request, APPROVAL_MAX_BYTES),
        body: ApprovalBody,
        response: { 200: ApprovalReply, ...errorReplies(400, 401, 403, 409, 413) },
      },
    );
}
