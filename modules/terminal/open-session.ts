// Opening a terminal session for a route: the console's button and the API token's door (`outpost ssh`)
// start the same session and answer the same way.
import { noteAudit } from "../audit/service";
import type { AppContext } from "../platform/context";
import type { TerminalLimits } from "./model";
import { startSession } from "./service";

type SessionOperator = Parameters<typeof startSession>[1]["operator"];

/** Starts the session, notes it for the audit record, and returns the 201 reply's body. */
export async function openSession(
  ctx: AppContext,
  limits: TerminalLimits,
  request: Request,
  deviceId: string,
  operator: SessionOperator,
) {
  const { config, database } = ctx;
  const settings = await ctx.settings.device();
  const started = await startSession(database.sql, {
    deviceId,
    operator,
    secretKey: config.secretKey,
    limits,
    remoteAccessMaxMinutes: config.remoteAccessMaxMinutes,
    onlineWindowSeconds: settings.onlineWindowSeconds,
  });
  noteAudit(request, {
    target: `terminal_session:${started.sessionId}`,
    details: { device_id: started.deviceId, command_id: started.commandId },
  });
  return {
    data: {
      session_id: started.sessionId,
      session_ref: started.sessionRef,
      command_id: started.commandId,
      socket_token: started.socketToken,
      topic: `terminal:${started.deviceId}`,
    },
  };
}
