import { ApiError, type DeviceApiClient, isValidPayloadRef } from "../api-client.ts";
import { mapLimit } from "../concurrency.ts";
import { runScriptCommand } from "./run-script.ts";
import { installScript, listScripts, removeScript } from "./scripts.ts";
import { sshAuthorize, sshRevoke } from "./ssh.ts";
import {
  type CommandContext,
  CommandFailure,
  type CommandHandler,
  type CommandResult,
  type ServerCommand,
} from "./types.ts";

/** Supported command types. */
export const COMMAND_HANDLERS: Record<string, CommandHandler> = {
  list_scripts: listScripts,
  install_script: installScript,
  remove_script: removeScript,
  ssh_authorize: sshAuthorize,
  ssh_revoke: sshRevoke,
  run_script: runScriptCommand,
};

function commandId(command: ServerCommand): string | null {
  const id = command.command_id;
  if (typeof id === "string" && id.trim() !== "") return id;
  if (typeof id === "number" && Number.isFinite(id)) return String(id);
  return null;
}

function failed(id: string, error: string, output?: Record<string, unknown>): CommandResult {
  return output
    ? { command_id: id, status: "FAILED", error, output }
    : { command_id: id, status: "FAILED", error };
}

/**
 * Run a handler under the command timeout; a timeout yields FAILED "timeout". The handlers do their work
 * synchronously (file writes), which no timer can interrupt, so the elapsed time is also checked when the
 * handler returns: a command that finished after its deadline is FAILED "timeout" too, and its output,
 * flagged `timed_out_after_commit: true`, says what it did anyway (e.g. the script it installed).
 */
async function runWithTimeout(
  handler: CommandHandler,
  command: ServerCommand,
  ctx: CommandContext,
  id: string,
): Promise<CommandResult> {
  const now = ctx.now ?? (() => performance.now());
  const limit = handler.timeoutMs?.(command, ctx) ?? ctx.config.command_timeout_ms;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), limit);
  });
  const started = now();
  try {
    const outcome = await Promise.race([handler(command, ctx), timeout]);
    if (outcome === "timeout") return failed(id, "timeout");
    const elapsed = now() - started;
    if (elapsed > limit) {
      ctx.logger.warn(
        { command_id: id, elapsed_ms: Math.round(elapsed), timeout_ms: limit },
        "command finished after its timeout",
      );
      return {
        command_id: id,
        status: "FAILED",
        error: "timeout",
        output: { ...outcome, timed_out_after_commit: true },
      };
    }
    return { command_id: id, status: "OK", output: outcome };
  } catch (err) {
    return failed(
      id,
      (err as Error).message || String(err),
      err instanceof CommandFailure ? err.output : undefined,
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Execute a batch in order (commands change shared files, so they run one at a time).
 * Missing id → FAILED "missing_command_id" (with an empty id); repeated id → FAILED "duplicate_command_id";
 * unknown type → FAILED "unsupported command: <type>"; commands whose payload could not be fetched
 * (given in `preFailed`) are reported with that error and not executed.
 */
export async function executeCommands(
  commands: ServerCommand[],
  ctx: CommandContext,
  preFailed: Map<ServerCommand, string> = new Map(),
  handlers: Record<string, CommandHandler> = COMMAND_HANDLERS,
): Promise<CommandResult[]> {
  const results: CommandResult[] = [];
  const seen = new Set<string>();
  for (const command of commands.slice(0, ctx.config.max_commands_per_poll)) {
    const id = commandId(command);
    if (id === null) {
      results.push(failed("", "missing_command_id"));
      continue;
    }
    if (seen.has(id)) {
      results.push(failed(id, "duplicate_command_id"));
      continue;
    }
    seen.add(id);
    const pre = preFailed.get(command);
    if (pre) {
      results.push(failed(id, pre));
      continue;
    }
    const type = typeof command.type === "string" ? command.type : String(command.type ?? "");
    const handler = Object.hasOwn(handlers, type) ? handlers[type] : undefined;
    if (!handler) {
      results.push(failed(id, `unsupported command: ${type || "(none)"}`));
      continue;
    }
    const result = await runWithTimeout(handler, command, ctx, id);
    const entry = { command_id: id, type, status: result.status, error: result.error };
    // A failure is something an operator must look at; a success is routine.
    if (result.status === "FAILED") ctx.logger.warn(entry, "command failed");
    else ctx.logger.info(entry, "command executed");
    results.push(result);
  }
  for (const command of commands.slice(ctx.config.max_commands_per_poll)) {
    const id = commandId(command);
    if (id) results.push(failed(id, "too_many_commands"));
  }
  return results;
}

/**
 * Fetch deferred payloads (`payload_ref` without `payload`), at most 8 at a time, each under the command
 * timeout. Returns the hydrated commands and the failures (`invalid_payload_ref: …` / `payload_fetch_failed: …`).
 */
export async function hydrateCommandPayloads(
  commands: ServerCommand[],
  api: Pick<DeviceApiClient, "fetchCommandPayload">,
  deviceId: string,
  token: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ commands: ServerCommand[]; failures: Map<ServerCommand, string> }> {
  const failures = new Map<ServerCommand, string>();
  const hydrated = commands.map((c) => ({ ...c }));
  const pending = hydrated.filter(
    (c) => c.payload_ref !== undefined && c.payload_ref !== null && c.payload === undefined,
  );
  await mapLimit(pending, 8, async (command) => {
    const ref = command.payload_ref;
    if (!isValidPayloadRef(ref)) {
      failures.set(command, `invalid_payload_ref: ${JSON.stringify(ref).slice(0, 80)}`);
      return;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ApiError(`timed out after ${timeoutMs} ms`, 0)), timeoutMs);
      });
      command.payload = await Promise.race([api.fetchCommandPayload(deviceId, token, ref, signal), timeout]);
    } catch (err) {
      failures.set(command, `payload_fetch_failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  });
  return { commands: hydrated, failures };
}
