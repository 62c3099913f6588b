import { type Static, Type } from "@sinclair/typebox";
import { compileSchema } from "../platform/schemas";
import type { Command } from "./service";

/**
 * `POST /api/v1/devices/:device_id/command_results`. The list is checked first (400, before the
 * device is even looked up, as in the reference), then each item on its own (modules/commands/results.ts).
 */
export const CommandResultsBody = Type.Object({ results: Type.Array(Type.Unknown()) });
export const commandResultsBody = compileSchema(CommandResultsBody);

/** An entry of the list. A missing or empty `command_id` is a result for no command (the agent's `missing_command_id`). */
export const CommandResult = Type.Object({
  command_id: Type.Optional(Type.String()),
  status: Type.Union([Type.Literal("OK"), Type.Literal("FAILED")]),
  output: Type.Optional(Type.Unknown()),
  error: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
export type CommandResult = Static<typeof CommandResult>;
export const commandResult = compileSchema(CommandResult);

export function commandJson(command: Command) {
  return {
    id: command.id,
    device_id: command.deviceId,
    type: command.type,
    args: command.args,
    payload: command.payload,
    payload_ref: command.payloadRef,
    public_key: command.publicKey,
    status: command.status,
    queued_at: command.queuedAt.toISOString(),
    expires_at: command.expiresAt.toISOString(),
    delivered_at: command.deliveredAt?.toISOString() ?? null,
    completed_at: command.completedAt?.toISOString() ?? null,
    output: command.output ?? null,
    error: command.error,
    queued_by: command.queuedBy,
  };
}
