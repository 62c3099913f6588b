import type { ScriptError } from "../../shared/scripts/errors.ts";
import type { ParsedScript } from "../../shared/scripts/frontmatter.ts";
import { compileOutputSchema, formatValidationErrors } from "../../shared/scripts/validation.ts";
import { createBuiltins } from "../builtins/index.ts";
import type { AgentConfig } from "../config.ts";
import { outputLimitProblem } from "../telemetry-limits.ts";
import { type HostBuiltins, SandboxSession } from "./sandbox.ts";

export interface ScriptWarning {
  type: "slow_execution";
  message: string;
  duration_ms: number;
}

/** One script's report, as sent in `telemetry.scripts.<name>.data`. */
export interface ScriptReport {
  status: "success" | "error" | "timeout";
  validation_status: "valid" | "invalid" | "skipped";
  duration_ms: number;
  output?: Record<string, unknown>;
  error?: ScriptError;
  warnings?: ScriptWarning[];
}

export interface RunOptions {
  timeoutMs: number;
  warnMs: number;
  memoryMb: number;
  builtins: HostBuiltins;
}

export interface RunResult {
  report: ScriptReport;
  /** Lines printed with console.log (not sent to the server). */
  logs: string[];
}

export function runOptionsFromConfig(
  config: AgentConfig,
  scriptName: string,
  configSource: string | null = null,
): RunOptions {
  return {
    timeoutMs: config.script_timeout_ms,
    warnMs: config.script_warn_ms,
    memoryMb: config.script_memory_mb,
    builtins: createBuiltins(config, scriptName, configSource),
  };
}

/**
 * Run a parsed script once: load it, call main(), validate the returned object against its schema.
 * One deadline (`timeoutMs` from the start of loading) covers loading the file and main() together.
 * An output the server would refuse (telemetry limits) becomes an execution error without the output.
 */
export async function runScript(script: ParsedScript, options: RunOptions): Promise<RunResult> {
  const started = performance.now();
  const session = await SandboxSession.create(options.builtins, {
    timeoutMs: options.timeoutMs,
    memoryMb: options.memoryMb,
  });
  try {
    const finish = (partial: Omit<ScriptReport, "duration_ms" | "warnings">): RunResult => {
      const duration = Math.round(performance.now() - started);
      const report: ScriptReport = { ...partial, duration_ms: duration };
      if (duration > options.warnMs && partial.status !== "timeout") {
        report.warnings = [
          { type: "slow_execution", message: `script took ${duration}ms`, duration_ms: duration },
        ];
      }
      return { report, logs: session.logs };
    };
    const failed = (error: ScriptError) =>
      finish({ status: error.type === "timeout" ? "timeout" : "error", validation_status: "skipped", error });

    const deadline = Date.now() + options.timeoutMs;
    const loaded = await session.evaluate(script.source, `${script.meta.name}.js`, deadline);
    if (!loaded.ok) return failed(loaded.error);
    const ran = await session.callGlobal("main", deadline);
    if (!ran.ok) return failed(ran.error);
    const value = ran.value;
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      const got = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
      return failed({ type: "execution", message: `main() must return an object, got ${got}` });
    }
    const output = value as Record<string, unknown>;
    const tooBig = outputLimitProblem(output);
    if (tooBig) return failed({ type: "execution", message: tooBig });
    const validate = compileOutputSchema(script.meta.schema);
    if (!validate(output)) {
      const details = formatValidationErrors(validate.errors ?? []);
      return finish({
        status: "error",
        validation_status: "invalid",
        output,
        error: {
          type: "validation",
          message: "schema validation failed",
          details: { simple: details.simple, verbose: details.verbose },
        },
      });
    }
    return finish({ status: "success", validation_status: "valid", output });
  } finally {
    session.close();
  }
}
