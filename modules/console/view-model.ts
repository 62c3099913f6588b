// What the console pages show, derived from other modules' data: kept out of the routes so they
// stay thin (parse, authorize, call, render).
import type { ListedScript, ReportedScript } from "../../ui/pages/device-detail";
import { DEFAULT_SORT, type DeviceQuery, defaultOrder } from "../../ui/pages/devices";
import type { Command } from "../commands/service";
import { CONSOLE_SORTS, type ConsoleSort } from "../devices/console-queries";
import { type Device, normaliseDeviceFilters } from "../devices/service";
import type { TelemetryEvent } from "../telemetry/service";

export function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The name the console shows (same rule as SQL device_display_name). */
export function displayName(device: Pick<Device, "metadata" | "macAddress">): string {
  const name = device.metadata?.name;
  return typeof name === "string" && name !== ""
    ? name
    : `device-${device.macAddress.replace(/:/g, "").toLowerCase()}`;
}

/** Only same-site /devices paths may be a return target. */
export function devicesReturn(value: unknown): string {
  return typeof value === "string" && /^\/devices(\?[^#\s]*)?$/.test(value) ? value : "/devices";
}

export function parseDeviceQuery(query: Record<string, unknown>): DeviceQuery {
  const filters = normaliseDeviceFilters(query);
  const sort = (CONSOLE_SORTS as readonly string[]).includes(text(query.sort))
    ? (text(query.sort) as ConsoleSort)
    : DEFAULT_SORT;
  const order = query.order === "asc" || query.order === "desc" ? query.order : defaultOrder(sort);
  const cursor = (v: unknown) => (typeof v === "string" && /^[\w-]{1,1000}$/.test(v) ? v : undefined);
  return {
    search: filters.search,
    approval_status: filters.approvalStatus,
    connectivity_status: filters.connectivityStatus,
    product: filters.product,
    sort,
    order,
    after: cursor(query.after),
    before: query.after ? undefined : cursor(query.before),
  };
}

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

/** `name:` from a script's front matter block. */
export function scriptName(source: string): string | undefined {
  const block = /\/\*---([\s\S]*?)---\*\//.exec(source);
  const match = block ? /^\s*name:\s*["']?([A-Za-z0-9][A-Za-z0-9_.-]{0,99})["']?\s*$/m.exec(block[1]!) : null;
  return match?.[1];
}
