import { Elysia } from "elysia";
import { apiKeyOf } from "../devices/service";
import type { AppContext } from "../platform/context";
import { jsonBody, readJsonBody } from "../platform/json-body";
import { commandsTotal, heartbeatsTotal } from "../platform/metrics";
import { heartbeatRemoteAccess } from "../remote-access/service";
import { deviceSettings } from "../settings/service";
import { noteHostKey, terminalHeartbeatHint } from "../terminal/service";
import { HEARTBEAT_MAX_BYTES } from "./model";
import { heartbeat, heartbeatBatcher } from "./service";

/** `POST /api/v1/devices/:device_id/heartbeat` (`?api_key=`). */
export function heartbeatRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  const batcher = heartbeatBatcher(sql, () => deviceSettings(ctx.config), {
    maxSize: ctx.config.heartbeatBatchSize,
    maxInFlight: ctx.config.heartbeatBatchConcurrency,
  });
  return new Elysia({ name: "heartbeat" }).use(ctx.access).post(
    "/api/v1/devices/:device_id/heartbeat",
    async ({ body, params, query }) => {
      const settings = await deviceSettings(ctx.config);
      const reply = await heartbeat(sql, batcher, params.device_id, apiKeyOf(query), jsonBody(body), {
        settings,
        remoteAccess: async (id) => {
          const access = await heartbeatRemoteAccess(sql, ctx.config, id);
          return access && terminalHeartbeatHint(sql, id, access);
        },
      });
      const hostKey = (body as { ssh_host_key?: unknown }).ssh_host_key;
      if (hostKey !== undefined) await noteHostKey(sql, params.device_id, hostKey);
      ctx.heartbeatAccepted?.(); // off the hot path (alerts: at most one enqueue per second)
      if (reply.commands.length > 0) commandsTotal.inc({ event: "delivered" }, reply.commands.length);
      return { data: reply };
    },
    {
      access: "device",
      parse: ({ request }) => readJsonBody(request, HEARTBEAT_MAX_BYTES),
      // Every answer counts, refusals at the credential check included.
      afterResponse: ({ set }) => {
        const status = Number(set.status ?? 200);
        heartbeatsTotal.inc({ result: status === 200 ? "accepted" : `refused_${status}` });
      },
    },
  );
}
