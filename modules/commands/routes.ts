import { Elysia } from "elysia";
// Commands → devices, one way: device authentication and the device API's rate limits.
import { apiKeyOf, authenticateDevice, consumeRateLimit } from "../devices/service";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { readJsonBody } from "../platform/json-body";
import { DeviceKeyQuery, DeviceParams, errorReplies } from "../platform/schemas";
import { CommandPayloadParams, CommandPayloadReply, CommandResultsBody, CommandResultsReply } from "./model";
import { commandPayload, recordCommandResults } from "./service";

export const RESULTS_MAX_BYTES = 1024 * 1024;

/** The device side of commands: results and deferred payloads (`?api_key=`). */
export function commandRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  // One budget per device for result posts and payload fetches, counted once authenticated (so a
  // caller without the device's token cannot spend it), as heartbeats are.
  const countCommandRequest = (deviceId: string) =>
    consumeRateLimit(sql, {
      key: `commands:${deviceId.toLowerCase()}`,
      limit: ctx.config.deviceCommandRateLimit,
      what: "Command API",
    });
  return new Elysia({ name: "commands" })
    .use(ctx.access)
    .post(
      "/api/v1/devices/:device_id/command_results",
      async ({ body: { results }, params, query, set }) => {
        await authenticateDevice(sql, params.device_id, apiKeyOf(query));
        await countCommandRequest(params.device_id);
        const recorded = await recordCommandResults(sql, params.device_id, results);
        set.status = 202;
        return { data: { acknowledged_count: recorded.acknowledged, results: recorded.results } };
      },
      {
        access: "device",
        detail: { summary: "Post the results of the device's commands" },
        // As in the reference: the list check (the schema) comes before device lookup and authentication.
        parse: ({ request }) => readJsonBody(request, RESULTS_MAX_BYTES),
        params: DeviceParams,
        query: DeviceKeyQuery,
        body: CommandResultsBody,
        response: { 202: CommandResultsReply, ...errorReplies(400, 401, 403, 404, 413, 422, 429) },
      },
    )
    .get(
      "/api/v1/devices/:device_id/command_payloads/:ref",
      async ({ params, query }) => {
        await authenticateDevice(sql, params.device_id, apiKeyOf(query));
        await countCommandRequest(params.device_id);
        const payload = await commandPayload(sql, params.device_id, params.ref);
        if (!payload) throw new AppError(404, "payload_not_found", "Command payload not found");
        // Unwrapped, as the reference's device client expects.
        return payload;
      },
      {
        access: "device",
        detail: { summary: "Fetch a command's deferred payload" },
        params: CommandPayloadParams,
        query: DeviceKeyQuery,
        response: { 200: CommandPayloadReply, ...errorReplies(401, 403, 404, 429) },
      },
    );
}
