import { Elysia } from "elysia";
import { noteAudit } from "../audit/service";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { DeviceParams, errorReplies } from "../platform/schemas";
import { type TerminalLimits, TerminalSessionReply } from "./model";
import { startSession } from "./service";

/**
 * The terminal for programs holding an API token (`outpost ssh`): the same session as the console's
 * Open terminal (ephemeral key, `ssh_authorize`, its own lease, recorded, audited), joined on `/socket`
 * with the token instead of a session cookie.
 */
export function terminalApiRoutes(ctx: AppContext, limits: TerminalLimits) {
  const { config, database } = ctx;
  return new Elysia({ name: "terminal-api" }).use(ctx.access).post(
    "/api/v1/devices/:device_id/terminal",
    async ({ params, principal, set, request }) => {
      // Signed-in pages open terminals from the device page (POST /devices/{id}/terminal), which asks for
      // a fresh second factor when the role wants one; this door is the API token's.
      if (principal?.kind !== "token")
        throw new AppError(403, "token_required", "This endpoint takes an API token (Authorization: Bearer)");
      const settings = await ctx.settings.device();
      const started = await startSession(database.sql, {
        deviceId: params.device_id,
        operator: { operatorId: principal.tokenId, email: `token ${principal.name}`, kind: "token" },
        secretKey: config.secretKey,
        limits,
        remoteAccessMaxMinutes: config.remoteAccessMaxMinutes,
        onlineWindowSeconds: settings.onlineWindowSeconds,
      });
      noteAudit(request, {
        target: `terminal_session:${started.sessionId}`,
        details: { device_id: started.deviceId, command_id: started.commandId },
      });
      set.status = 201;
      return {
        data: {
          session_id: started.sessionId,
          session_ref: started.sessionRef,
          command_id: started.commandId,
          socket_token: started.socketToken,
          topic: `terminal:${started.deviceId}`,
        },
      };
    },
    {
      access: "operator",
      detail: {
        summary: "Open a terminal session on a device (join it on the /socket WebSocket; docs/cli.md)",
      },
      params: DeviceParams,
      response: { 201: TerminalSessionReply, ...errorReplies(401, 403, 404, 409) },
    },
  );
}
