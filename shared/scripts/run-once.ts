// `run_script`, a script run once on a device (an addition beyond the spec's command types): its
// limits and the one rule for its text, imported by the server (refused at queue time) and the agent.
import { ScriptFormatError } from "./errors.ts";
import { parseScript } from "./frontmatter.ts";

/** Bounds of a run's `timeout_seconds`: the poll waits for the run, so it stays under the online window. */
export const RUN_SCRIPT_TIMEOUT_MIN_S = 1;
export const RUN_SCRIPT_TIMEOUT_MAX_S = 300;
/** Each of stdout and stderr is cut at this many bytes (UTF-8) and marked `…_truncated`. */
export const RUN_SCRIPT_STREAM_MAX_BYTES = 16 * 1024;
/** A run's display name (shown in the command history), when given. */
export const RUN_SCRIPT_NAME_MAX = 100;
/** Exit codes of a run: it ended, it threw (or hit a limit), it ran out of time (as `timeout(1)`). */
export const RUN_EXIT_OK = 0;
export const RUN_EXIT_ERROR = 1;
export const RUN_EXIT_TIMEOUT = 124;

export interface RunOnceScript {
  /** The front matter's name when the script has one (a plugin script run once). */
  name: string | undefined;
  /** The text with LF line endings (a browser's textarea posts CRLF). */
  source: string;
}

/**
 * A script to run once: JavaScript for the agent's sandbox, as plugin scripts are. Front matter is
 * optional, and checked as an installed script's when present (so any plugin script can be run once).
 * There is no shell: a `#!` line is refused rather than failing as a syntax error on the device.
 */
export function parseRunOnceScript(text: string): RunOnceScript {
  const source = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  if (source.trim() === "") throw new ScriptFormatError("the script is empty");
  if (source.trimStart().startsWith("#!")) {
    throw new ScriptFormatError(
      "scripts run in the agent's JavaScript sandbox, not a shell: remove the #! line (run programs with exec_cmd)",
    );
  }
  if (!source.trimStart().startsWith("/*---")) return { name: undefined, source };
  return { name: parseScript(source).meta.name, source };
}

/** What a run answers as its command output (the agent's `run_script` handler). */
export interface RunScriptOutput {
  exit_code: number;
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  duration_ms: number;
}
