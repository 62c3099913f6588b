import { Elysia } from "elysia";
import { apiKeyOf, authenticateDevice } from "../devices/service";
import type { AppContext } from "../platform/context";
import { readJsonBody } from "../platform/json-body";
import { commandsTotal, heartbeatsTotal } from "../platform/metrics";
import { DeviceKeyQuery, DeviceParams, errorReplies } from "../platform/schemas";
import { credentialsBeforeInput } from "../platform/validation";
import { activeLeases, heartbeatRemoteAccess } from "../remote-access/service";
import { terminalHeartbeatHint } from "../terminal/service";
import {
  HEARTBEAT_MAX_BYTES,
  HeartbeatBody,
  HeartbeatReplySchema,
  WaitQuery,
  WaitReplySchema,
} from "./model";
import { heartbeat, heartbeatBatcher } from "./service";

/**
 * `POST /api/v1/devices/:device_id/heartbeat` (`?api_key=`), and `GET …/wait`, which an agent holds
 * open between polls so that work for it (remote access, a command) starts its next poll at once.
 */
export function heartbeatRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  const batcher = heartbeatBatcher(sql, () => ctx.settings.device(), {
    maxSize: ctx.config.heartbeatBatchSize,
    maxInFlight: ctx.config.heartbeatBatchConcurrency,
    overlap: { at: ctx.config.heartbeatBatchOverlapAt, afterMs: ctx.config.heartbeatBatchOverlapWaitMs },
    lingerMs: ctx.config.heartbeatBatchLingerMs,
    onFollowUpError: (error) =>
      ctx.logger.warn(
        { err: error },
        "announced telemetry schemas or SSH host keys not stored; the next heartbeats retry",
      ),
  });
  return new Elysia({ name: "heartbeat" })
    .use(ctx.access)
    .post(
      "/api/v1/devices/:device_id/heartbeat",
      async ({ body, params, query }) => {
        const settings = await ctx.settings.device();
        const reply = await heartbeat(sql, batcher, params.device_id, apiKeyOf(query), body, {
          settings,
          remoteAccess: async (id) => {
            const access = await heartbeatRemoteAccess(sql, ctx.config, id);
            return access && terminalHeartbeatHint(sql, id, access);
          },
        });
        ctx.heartbeatAccepted?.(); // off the hot path (alerts: at most one enqueue per second)
        if (reply.commands.length > 0) commandsTotal.inc({ event: "delivered" }, reply.commands.length);
        return { data: reply };
      },
      {
        access: "device",
        detail: { summary: "Send a heartbeat: telemetry in, queued commands and remote-access requests out" },
        parse: ({ request }) => readJsonBody(request, HEARTBEAT_MAX_BYTES),
        transform: ({ request, params, query }) =>
          credentialsBeforeInput(request, () => authenticateDevice(sql, params.device_id, apiKeyOf(query))),
        params: DeviceParams,
        query: DeviceKeyQuery,
        body: HeartbeatBody,
        response: {
          200: HeartbeatReplySchema,
          ...errorReplies(400, 401, 403, 404, 413, 422, 429),
        },
        // Every answer counts, refusals at the credential check included.
        afterResponse: ({ set }) => {
          const status = Number(set.status ?? 200);
          heartbeatsTotal.inc({ result: status === 200 ? "accepted" : `refused_${status}` });
        },
      },
    )
    .get(
      "/api/v1/devices/:device_id/wait",
      async ({ params, query, request, server }) => {
        const maxSeconds = ctx.config.deviceWaitMaxSeconds;
        const seconds = Math.min(maxSeconds, Number(query.timeout_s ?? maxSeconds));
        // Bun closes a connection quiet for its idle timeout (30 s): this one is quiet on purpose.
        server?.timeout(request, seconds + 10);
        const { wake } = await ctx.deviceWaits.wait({
          deviceId: params.device_id,
          apiKey: apiKeyOf(query),
          holdsRemoteAccess: query.remote_access === "1",
          remoteAccessActive: async (id) => (await activeLeases(sql, id)).length > 0,
          timeoutMs: seconds * 1000,
          signal: request.signal,
        });
        return { data: { wake: wake ?? null } };
      },
      {
        access: "device",
        detail: { summary: "Wait (long poll) until there is work for the device" },
        params: DeviceParams,
        query: WaitQuery,
        response: { 200: WaitReplySchema, ...errorReplies(400, 401, 403, 404) },
      },
    );
}
