import { Elysia } from "elysia";
import { JSONAPI_PREFIX, jsonApiDocument, jsonApiNextLink, jsonApiPageSize } from "../jsonapi";
import { ResourceIdParams } from "../jsonapi/model";
import type { AppContext } from "../platform/context";
import { AppError, badRequest } from "../platform/errors";
import { jsonApiErrorReplies } from "../platform/schemas";
import { TelemetryDocument, TelemetryListDocument, TelemetryListQuery } from "./model";
import { getTelemetryEvent, listTelemetryEvents, type TelemetryEvent } from "./service";

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

/** `filter[from]`/`filter[to]`: an ISO 8601 time, or none when absent or empty. */
function timeParam(raw: string | undefined, name: string): Date | undefined {
  if (raw === undefined || raw === "") return undefined;
  const value = new Date(raw);
  if (Number.isNaN(value.getTime())) throw badRequest(`${name} must be an ISO 8601 time`, { field: name });
  return value;
}

/** The JSON:API `telemetry_event` resource: list and read. */
export function telemetryJsonApiRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;

  return new Elysia({ name: "telemetry-jsonapi", prefix: JSONAPI_PREFIX })
    .use(ctx.access)
    .get(
      "/telemetry_events",
      async ({ query, request }) => {
        const list = await listTelemetryEvents(sql, {
          deviceId: query["filter[device_id]"] || undefined,
          from: timeParam(query["filter[from]"], "filter[from]"),
          to: timeParam(query["filter[to]"], "filter[to]"),
          limit: jsonApiPageSize(query, 100, 1000),
          cursor: query["page[after]"] || undefined,
        });
        return jsonApiDocument({
          data: list.events.map(telemetryResource),
          links: { next: jsonApiNextLink(request, list.nextCursor) },
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
