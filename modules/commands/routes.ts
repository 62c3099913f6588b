import { Elysia } from "elysia";
import { authenticateDevice, consumeRateLimit } from "../devices/service";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { isPlainObject, jsonBody, readJsonBody } from "../platform/json-body";
import { type CommandResultInput, commandPayload, recordCommandResults } from "./service";

export const RESULTS_MAX_BYTES = 1024 * 1024;
export const RESULTS_MAX_ITEMS = 500;

function apiKeyOf(query: Record<string, unknown>): string | undefined {
  const value = query.api_key;
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** 422 invalid_results for the first malformed item; nothing is stored then. */
export function parseResults(items: unknown[]): CommandResultInput[] {
  if (items.length > RESULTS_MAX_ITEMS) {
    throw new AppError(422, "invalid_results", `At most ${RESULTS_MAX_ITEMS} results per request`, {
      max_items: RESULTS_MAX_ITEMS,
    });
  }
  return items.map((item, index) => {
    const fail = (message: string) => new AppError(422, "invalid_results", message, { index });
    if (!isPlainObject(item)) throw fail(`results[${index}] must be an object`);
    if (typeof item.command_id !== "string" || item.command_id === "")
      throw fail(`results[${index}].command_id is required`);
    if (item.status !== "OK" && item.status !== "FAILED")
      throw fail(`results[${index}].status must be OK or FAILED`);
    if (item.error !== undefined && item.error !== null && typeof item.error !== "string") {
      throw fail(`results[${index}].error must be a string`);
    }
    return {
      command_id: item.command_id,
      status: item.status,
      output: item.output ?? undefined,
      error: typeof item.error === "string" ? item.error.slice(0, 16_384) : undefined,
    };
  });
}

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
      async ({ body: raw, params, query, set }) => {
        const body = jsonBody(raw);
        // As in the reference: the list check comes before device lookup and authentication.
        const results = isPlainObject(body) ? body.results : undefined;
        if (!Array.isArray(results))
          throw new AppError(400, "invalid_request", "results must be a list", { field: "results" });
        await authenticateDevice(sql, params.device_id, apiKeyOf(query));
        await countCommandRequest(params.device_id);
        const parsed = parseResults(results);
        const acknowledged = await recordCommandResults(sql, params.device_id, parsed);
        set.status = 202;
        return { data: { acknowledged_count: acknowledged } };
      },
      { access: "device", parse: ({ request }) => readJsonBody(request, RESULTS_MAX_BYTES) },
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
      { access: "device" },
    );
}
