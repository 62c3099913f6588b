import { Elysia } from "elysia";
import { noteAudit } from "../audit/service";
import type { AppContext } from "../platform/context";
import { badRequest } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { jsonBody, readJsonBody } from "../platform/json-body";
import { firstInvalidField } from "../platform/schemas";
import { deviceSettings } from "../settings/service";
import { approvalBody, deviceJson } from "./model";
import {
  consumeRateLimit,
  DEVICE_SORTS,
  type DeviceSort,
  listDevices,
  normaliseDeviceFilters,
  registerDevice,
  setApprovalStatus,
} from "./service";

const REGISTER_MAX_BYTES = 128 * 1024;
const APPROVAL_MAX_BYTES = 64 * 1024;

const APPROVAL_MESSAGES: Record<string, string> = {
  ids: "ids must be a list of device ids",
  approval_status: "approval_status must be approved or rejected",
};

/** The device API: registration (devices), the device list and bulk approval (operators). */
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
        const { device, apiToken } = await registerDevice(sql, jsonBody(body), {
          ...settings,
          address: clientAddress(request, server),
        });
        set.status = 201;
        return { data: { ...deviceJson(device), ...(apiToken ? { api_token: apiToken } : {}) } };
      },
      { access: "public", parse: ({ request }) => readJsonBody(request, REGISTER_MAX_BYTES) },
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
      async ({ body: raw, request }) => {
        const body = jsonBody(raw);
        if (!approvalBody.Check(body)) {
          const field = firstInvalidField(approvalBody, body, ["ids", "approval_status"]);
          if (!field) throw badRequest("The request body must be a JSON object");
          throw badRequest(APPROVAL_MESSAGES[field]!, { field });
        }
        const { ids, approval_status: status } = body;
        const changed = await setApprovalStatus(sql, ids, status);
        noteAudit(request, { details: { changed_ids: changed } });
        return { data: { changed_ids: changed, changed_count: changed.length } };
      },
      { access: "operator", parse: ({ request }) => readJsonBody(request, APPROVAL_MAX_BYTES) },
    );
}
