import type { Command } from "./service";

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
