import { Elysia } from "elysia";
// Commands → devices, one way: device authentication and the device API's rate limits.
import { apiKeyOf, authenticateDevice, consumeRateLimit } from "../devices/service";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { jsonBody, readJsonBody } from "../platform/json-body";
import { firstInvalidField } from "../platform/schemas";
import { commandResult, commandResultsBody } from "./model";
import { type CommandResultInput, commandPayload, recordCommandResults } from "./service";

export const RESULTS_MAX_BYTES = 1024 * 1024;
export const RESULTS_MAX_ITEMS = 500;

const ITEM_FIELDS = ["command_id", "status", "error"] as const;
const ITEM_PROBLEMS: Record<(typeof ITEM_FIELDS)[number], string> = {
  command_id: "command_id is required",
  status: "status must be OK or FAILED",
  error: "error must be a string",
};

/** 422 invalid_results for the first malformed item (CommandResult); nothing is stored then. */
export function parseResults(items: unknown[]): CommandResultInput[] {
  if (items.length > RESULTS_MAX_ITEMS) {
    throw new AppError(422, "invalid_results", `At most ${RESULTS_MAX_ITEMS} results per request`, {
      max_items: RESULTS_MAX_ITEMS,
    });
  }
  return items.map((item, index) => {
    if (!commandResult.Check(item)) {
      const field = firstInvalidField(commandResult, item, ITEM_FIELDS) as (typeof ITEM_FIELDS)[number] | "";
      const message = field
        ? `results[${index}].${ITEM_PROBLEMS[field]}`
        : `results[${index}] must be an object`;
      throw new AppError(422, "invalid_results", message, { index });
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
        if (!commandResultsBody.Check(body))
          throw new AppError(400, "invalid_request", "results must be a list", { field: "results" });
        const { results } = body;
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
