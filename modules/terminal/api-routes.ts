import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { DeviceParams, errorReplies } from "../platform/schemas";
import { type TerminalLimits, TerminalSessionReply } from "./model";
import { openSession } from "./open-session";

/**
 * The terminal for programs holding an API token (`outpost ssh`): the same session as the console's
 * Open terminal (ephemeral key, `ssh_authorize`, its own lease, recorded, audited), joined on `/socket`
 * with the token instead of a session cookie.
 */
export function terminalApiRoutes(ctx: AppContext, limits: TerminalLimits) {
  return new Elysia({ name: "terminal-api" }).use(ctx.access).post(
    "/api/v1/devices/:device_id/terminal",
    async ({ params, principal, set, request }) => {
      // Signed-in pages open terminals from the device page (POST /devices/{id}/terminal), which asks for
      // a fresh second factor when the role wants one; this door is the API token's.
      if (principal?.kind !== "token")
        throw new AppError(403, "token_required", "This endpoint takes an API token (Authorization: Bearer)");
      set.status = 201;
      return openSession(ctx, limits, request, params.device_id, {
        operatorId: principal.tokenId,
        email: `token ${principal.name}`,
        kind: "token",
      });
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
