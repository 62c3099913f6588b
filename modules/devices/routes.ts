import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { badRequest } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { isPlainObject, jsonBody, readJsonBody } from "../platform/json-body";
import { deviceSettings } from "../settings/service";
import { deviceJson } from "./model";
import {
  consumeRateLimit,
  DEVICE_SORTS,
  type DeviceSort,
  HEARTBEAT_MAX_BYTES,
  heartbeat,
  listDevices,
  normaliseDeviceFilters,
  registerDevice,
  setApprovalStatus,
} from "./service";

const REGISTER_MAX_BYTES = 128 * 1024;
const APPROVAL_MAX_BYTES = 64 * 1024;

/** `?api_key=` as sent (query only, never the body). */
export function apiKeyOf(query: Record<string, unknown>): string | undefined {
  const value = query.api_key;
  return typeof value === "string" && value !== "" ? value : undefined;
}

export function deviceRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  const sql = database.sql;

  return new Elysia({ name: "devices" })
    .use(ctx.access)
    .post(
      "/api/v1/devices/register",
      async ({ body, request, server, set }) => {
        // Public, so limited per client address (the TCP peer, as for sign-in), before any work.
        await consumeRateLimit(sql, {
          key: `register:${clientAddress(request, server)}`,
          limit: config.deviceRegisterRateLimit,
          what: "Registration",
        });
        const settings = await deviceSettings(config);
        const { device, apiToken } = await registerDevice(sql, jsonBody(body), settings);
        set.status = 201;
        return { data: { ...deviceJson(device), ...(apiToken ? { api_token: apiToken } : {}) } };
      },
      { access: "public", parse: ({ request }) => readJsonBody(request, REGISTER_MAX_BYTES) },
    )
    .post(
      "/api/v1/devices/:device_id/heartbeat",
      async ({ body, params, query }) => {
        const settings = await deviceSettings(config);
        const reply = await heartbeat(sql, params.device_id, apiKeyOf(query), jsonBody(body), { settings });
        ctx.heartbeatAccepted?.(); // off the hot path (alerts: at most one enqueue per second)
        return { data: reply };
      },
      { access: "device", parse: ({ request }) => readJsonBody(request, HEARTBEAT_MAX_BYTES) },
    )
    .get(
      "/api/v1/devices",
      async ({ query }) => {
        const settings = await deviceSettings(config);
        const filters = normaliseDeviceFilters(query);
        const sort = query.sort as DeviceSort | undefined;
        if (sort !== undefined && !(DEVICE_SORTS as readonly string[]).includes(sort)) {
          throw badRequest(`sort must be one of ${DEVICE_SORTS.join(", ")}`, { field: "sort" });
        }
        if (query.order !== undefined && query.order !== "asc" && query.order !== "desc") {
          throw badRequest("order must be asc or desc", { field: "order" });
        }
        const limit = query.limit === undefined ? undefined : Number(query.limit);
        if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 500)) {
          throw badRequest("limit must be an integer from 1 to 500", { field: "limit" });
        }
        const list = await listDevices(sql, {
          ...filters,
          onlineWindowSeconds: settings.onlineWindowSeconds,
          sort,
          order: query.order as "asc" | "desc" | undefined,
          limit,
          cursor: typeof query.cursor === "string" && query.cursor !== "" ? query.cursor : undefined,
        });
        return {
          data: list.devices.map((d) => deviceJson(d, { schema: false })),
          meta: { active_filters: list.activeFilters, next_cursor: list.nextCursor ?? null },
        };
      },
      { access: "viewer" },
    )
    .post(
      "/api/v1/devices/approval",
      async ({ body: raw }) => {
        const body = jsonBody(raw);
        if (!isPlainObject(body)) throw badRequest("The request body must be a JSON object");
        const { ids, approval_status: status } = body;
        if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) {
          throw badRequest("ids must be a list of device ids", { field: "ids" });
        }
        if (status !== "approved" && status !== "rejected") {
          throw badRequest("approval_status must be approved or rejected", { field: "approval_status" });
        }
        const changed = await setApprovalStatus(sql, ids as string[], status);
        return { data: { changed_ids: changed, changed_count: changed.length } };
      },
      { access: "operator", parse: ({ request }) => readJsonBody(request, APPROVAL_MAX_BYTES) },
    );
}
