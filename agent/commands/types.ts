import type { AgentConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { ScriptStore } from "../scripts/store.ts";

/** A command as delivered in the heartbeat reply. Everything is optional: the agent validates. */
export interface ServerCommand {
  command_id?: unknown;
  type?: unknown;
  args?: unknown;
  payload?: unknown;
  payload_ref?: unknown;
  queued_at?: unknown;
  public_key?: unknown;
}

/** One entry of the `command_results` request. */
export interface CommandResult {
  command_id: string;
  status: "OK" | "FAILED";
  output?: Record<string, unknown>;
  error?: string;
}

export interface CommandContext {
  config: AgentConfig;
  /** The configuration file read (scripts may never read it), or null for the defaults. */
  configSource?: string | null;
  store: ScriptStore;
  logger: Logger;
  /** Monotonic clock in ms used to time commands (default `performance.now`). */
  now?: () => number;
}

/**
 * A command handler; throws CommandFailure (or any Error) to produce a FAILED result. `timeoutMs`, when
 * a handler has it, gives the command's own time limit instead of `command_timeout_ms`.
 */
export type CommandHandler = ((
  command: ServerCommand,
  ctx: CommandContext,
) => Promise<Record<string, unknown>>) & {
  timeoutMs?: (command: ServerCommand, ctx: CommandContext) => number;
};

/** A FAILED result; `output`, when given, is posted with it (what the command did before it failed). */
export class CommandFailure extends Error {
  override name = "CommandFailure";
  constructor(
    message: string,
    readonly output?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Merge the command's `args` (object form) and `payload` (object form) into one lookup; args win. */
export function commandFields(command: ServerCommand): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const payload = command.payload;
  if (payload && typeof payload === "object" && !Array.isArray(payload)) {
    const p = payload as Record<string, unknown>;
    Object.assign(fields, p);
    // Reference form: payload.data is a JSON string carrying the real fields.
    if (typeof p.data === "string" && p.data.trim().startsWith("{")) {
      try {
        const inner = JSON.parse(p.data) as unknown;
        if (inner && typeof inner === "object" && !Array.isArray(inner)) Object.assign(fields, inner);
      } catch {
        // not JSON: leave data as text
      }
    }
  }
  if (typeof command.public_key === "string") fields.public_key = command.public_key;
  const args = command.args;
  if (args && typeof args === "object" && !Array.isArray(args))
    Object.assign(fields, args as Record<string, unknown>);
  return fields;
}

/** Positional args when `args` is a list. */
export function positionalArgs(command: ServerCommand): unknown[] {
  return Array.isArray(command.args) ? command.args : [];
}
