// What the scripts tab shows, read from the latest heartbeat and the answers to list_scripts.
import type { Command } from "../../commands/service";
import type { TelemetryEvent } from "../../telemetry/service";
import type { ListedScript, ReportedScript } from "./props";

export function reportedScripts(latest: TelemetryEvent | undefined): ReportedScript[] {
  const scripts = latest?.payload?.scripts;
  if (!scripts || typeof scripts !== "object") return [];
  return Object.entries(scripts as Record<string, { data?: Record<string, unknown> }>).map(
    ([name, entry]) => {
      const data = (entry?.data ?? {}) as Record<string, unknown>;
      const error = data.error as { message?: unknown } | string | undefined;
      return {
        name,
        status: typeof data.status === "string" ? data.status : "unknown",
        validation: typeof data.validation_status === "string" ? data.validation_status : undefined,
        durationMs: typeof data.duration_ms === "number" ? data.duration_ms : undefined,
        error:
          typeof error === "string" ? error : typeof error?.message === "string" ? error.message : undefined,
      };
    },
  );
}

export function listedScripts(command: Command): ListedScript[] | undefined {
  const output = command.output as { scripts?: unknown } | null;
  if (!output || !Array.isArray(output.scripts)) return undefined;
  return output.scripts
    .filter((s): s is Record<string, unknown> => typeof s === "object" && s !== null)
    .map((s) => ({
      name: String(s.name ?? "?"),
      version: String(s.version ?? ""),
      path: String(s.path ?? ""),
      active: s.active !== false,
    }));
}
