// `run_script`: a script the server sends to run once (beyond the spec's command types). It runs in the
// plugin scripts' sandbox with their builtins and limits, from memory: it is never installed, and its
// memo store is its own and dropped after the run, so nothing of it stays on the device.
import { ScriptFormatError } from "../../shared/scripts/errors.ts";
import {
  parseRunOnceScript,
  RUN_EXIT_ERROR,
  RUN_EXIT_OK,
  RUN_EXIT_TIMEOUT,
  RUN_SCRIPT_STREAM_MAX_BYTES,
  RUN_SCRIPT_TIMEOUT_MAX_S,
  RUN_SCRIPT_TIMEOUT_MIN_S,
  type RunScriptOutput,
} from "../../shared/scripts/run-once.ts";
import { createBuiltins } from "../builtins/index.ts";
import { ScriptMemo } from "../builtins/system.ts";
import type { AgentConfig } from "../config.ts";
import { type EvalOutcome, SandboxSession } from "../scripts/sandbox.ts";
import { CommandFailure, type CommandHandler, type ServerCommand } from "./types.ts";

export const RUN_SCRIPT_DISABLED =
  "run_script is disabled by this agent's config (run_script_enabled: false)";
/** The executor's limit is the run's own plus this, so the sandbox's deadline ends the run first. */
const EXECUTOR_GRACE_MS = 2000;

/** One output stream, cut at RUN_SCRIPT_STREAM_MAX_BYTES of UTF-8 (never inside a character). */
class Stream {
  private readonly parts: string[] = [];
  private bytes = 0;
  truncated = false;

  write(line: string) {
    if (this.truncated) return;
    const data = Buffer.from(`${line}\n`);
    const room = RUN_SCRIPT_STREAM_MAX_BYTES - this.bytes;
    if (data.length <= room) {
      this.parts.push(data.toString());
      this.bytes += data.length;
      return;
    }
    let end = room;
    while (end > 0 && (data[end]! & 0xc0) === 0x80) end--; // back to a character's first byte
    this.parts.push(data.subarray(0, end).toString());
    this.bytes += end;
    this.truncated = true;
  }

  get text(): string {
    return this.parts.join("");
  }
}

function payloadOf(command: ServerCommand): Record<string, unknown> {
  const payload = command.payload;
  if (typeof payload === "string") return { data: payload };
  return payload && typeof payload === "object" && !Array.isArray(payload)
    ? (payload as Record<string, unknown>)
    : {};
}

/** The run's time limit: `timeout_seconds` (bounded as the server bounds it), else `script_timeout_ms`. */
function runTimeoutMs(command: ServerCommand, config: AgentConfig): number {
  const seconds = payloadOf(command).timeout_seconds;
  if (seconds === undefined || seconds === null) return config.script_timeout_ms;
  if (
    !Number.isInteger(seconds) ||
    (seconds as number) < RUN_SCRIPT_TIMEOUT_MIN_S ||
    (seconds as number) > RUN_SCRIPT_TIMEOUT_MAX_S
  ) {
    throw new CommandFailure(
      `timeout_seconds must be a whole number from ${RUN_SCRIPT_TIMEOUT_MIN_S} to ${RUN_SCRIPT_TIMEOUT_MAX_S}`,
    );
  }
  return (seconds as number) * 1000;
}

/**
 * Runs the script: its top level, then `main()` when it defines one (awaited; a value it returns is
 * written to stdout, as JSON unless it is a string). `console.log/info/debug` write stdout,
 * `console.warn/error` stderr. Exit code 0 when it ran to its end, 1 when it threw or hit a limit (the
 * error on stderr), 124 when it ran out of time. Output `{exit_code, stdout, stderr, stdout_truncated,
 * stderr_truncated, duration_ms}`; a non-zero exit is FAILED with that output.
 */
async function runOnce(command: ServerCommand, ctx: Parameters<CommandHandler>[1]) {
  if (!ctx.config.run_script_enabled) throw new CommandFailure(RUN_SCRIPT_DISABLED);
  const data = payloadOf(command).data;
  if (typeof data !== "string") throw new CommandFailure("missing script content");
  let script: ReturnType<typeof parseRunOnceScript>;
  try {
    script = parseRunOnceScript(data);
  } catch (err) {
    if (err instanceof ScriptFormatError) throw new CommandFailure(err.message);
    throw err;
  }
  const timeoutMs = runTimeoutMs(command, ctx.config);
  const stdout = new Stream();
  const stderr = new Stream();
  const started = performance.now();
  // The run's timeout bounds its builtins as a plugin script's does (exec_cmd, pub_and_get).
  const builtins = createBuiltins(
    { ...ctx.config, script_timeout_ms: timeoutMs },
    `run_script:${String(command.command_id)}`,
    ctx.configSource ?? null,
    new ScriptMemo(),
  );
  const session = await SandboxSession.create(
    builtins,
    { timeoutMs, memoryMb: ctx.config.script_memory_mb },
    (level, line) => (level === "warn" || level === "error" ? stderr : stdout).write(line),
  );
  let outcome: EvalOutcome;
  try {
    const deadline = Date.now() + timeoutMs;
    outcome = await session.evaluate(script.source, `${script.name ?? "run_script"}.js`, deadline);
    if (outcome.ok) {
      const hasMain = await session.evaluate("typeof main === 'function'", "run_script-main.js", deadline);
      if (hasMain.ok && hasMain.value === true) {
        outcome = await session.callGlobal("main", deadline);
        if (outcome.ok && outcome.value !== undefined && outcome.value !== null)
          stdout.write(typeof outcome.value === "string" ? outcome.value : JSON.stringify(outcome.value));
      } else if (!hasMain.ok) outcome = hasMain;
    }
  } finally {
    session.close();
  }
  const exitCode = outcome.ok
    ? RUN_EXIT_OK
    : outcome.error.type === "timeout"
      ? RUN_EXIT_TIMEOUT
      : RUN_EXIT_ERROR;
  if (!outcome.ok) stderr.write(`${outcome.error.type} error: ${outcome.error.message}`);
  const output: RunScriptOutput = {
    exit_code: exitCode,
    stdout: stdout.text,
    stderr: stderr.text,
    stdout_truncated: stdout.truncated,
    stderr_truncated: stderr.truncated,
    duration_ms: Math.round(performance.now() - started),
  };
  if (outcome.ok) return { ...output };
  throw new CommandFailure(
    exitCode === RUN_EXIT_TIMEOUT ? "timeout" : `exit code ${exitCode}: ${outcome.error.message}`,
    { ...output },
  );
}

export const runScriptCommand: CommandHandler = Object.assign(runOnce, {
  timeoutMs: (command: ServerCommand, ctx: Parameters<CommandHandler>[1]) => {
    try {
      return runTimeoutMs(command, ctx.config) + EXECUTOR_GRACE_MS;
    } catch {
      return ctx.config.command_timeout_ms; // the handler refuses it at once
    }
  },
});
