// Each tab's data, read through the services of devices, telemetry and commands (only for the open tab).
import { listCommands, listUnmatchedResults } from "../../commands/service";
import type { Device } from "../../devices/service";
import type { Sql } from "../../platform/database";
import {
  chartPriority,
  deviceChartData,
  firstTelemetrySince,
  MAX_CHART_FIELDS,
  numericFields,
  type TelemetryEvent,
} from "../../telemetry/service";
import { type ChartGroup, type DeviceDetailProps, TELEMETRY_RANGES, type TelemetryRange } from "./props";
import { listedScripts, reportedScripts } from "./scripts";

export interface TabLoadInput {
  sql: Sql;
  device: Device;
  latest: TelemetryEvent | undefined;
  /** The page's query; `field` is always a list (repeated parameter). */
  query: Record<string, unknown>;
}

const COMMANDS_PAGE = 50;
/** Commands searched for the latest list_scripts answer. */
const SCRIPT_LISTING_WINDOW = 100;

const DEFAULT_RANGE = TELEMETRY_RANGES[2]; // 24 hours

/**
 * Without a chosen range: the smallest one up to 24 h that holds all of the last day's data, so a
 * device that started reporting ten minutes ago shows lines over the last hour, not a dot at 24 h.
 */
async function defaultRange(sql: Sql, deviceId: string, now: Date) {
  const first = await firstTelemetrySince(
    sql,
    deviceId,
    new Date(now.getTime() - DEFAULT_RANGE.seconds * 1000),
  );
  if (!first) return DEFAULT_RANGE;
  const age = (now.getTime() - first.getTime()) / 1000;
  return (
    TELEMETRY_RANGES.find((r) => r.seconds >= age && r.seconds <= DEFAULT_RANGE.seconds) ?? DEFAULT_RANGE
  );
}

export async function loadTelemetryTab({ sql, device, latest, query }: TabLoadInput) {
  const to = new Date();
  const chosen = TELEMETRY_RANGES.find((r) => r.id === query.range);
  const range = (chosen ?? (await defaultRange(sql, device.id, to))) as {
    id: TelemetryRange;
    seconds: number;
  };
  const from = new Date(to.getTime() - range.seconds * 1000);
  // One small chart per numeric field (units differ even within a script), at most 12: the
  // ones picked (?field=cpu.usage_pct&field=...), else the first 12 by chartPriority.
  const available = numericFields(latest?.payload)
    .map((field, index) => ({ field, index }))
    .sort((a, b) => chartPriority(a.field.label) - chartPriority(b.field.label) || a.index - b.index)
    .map((entry) => entry.field);
  const requested = new Set(
    (Array.isArray(query.field) ? query.field : [query.field]).filter(
      (v): v is string => typeof v === "string" && v !== "",
    ),
  );
  const picked = available.filter((f) => requested.has(f.label));
  const fields = (picked.length > 0 ? picked : available).slice(0, MAX_CHART_FIELDS);
  const data = await deviceChartData(
    sql,
    device.id,
    fields.map((f) => f.label),
    from,
    to,
  );
  const groups: ChartGroup[] = fields.map((field, i) => ({
    script: field.label,
    labels: [field.label.slice(field.label.indexOf(".") + 1)],
    data: { ...data, series: [data.series[i] ?? []] },
  }));
  return {
    telemetry: {
      range: range.id,
      groups,
      events: data.events,
      available: available.map((f) => f.label),
      shown: fields.map((f) => f.label),
      picked: picked.length > 0,
      maxFields: MAX_CHART_FIELDS,
    },
  } satisfies Partial<DeviceDetailProps>;
}

export async function loadScriptsTab({ sql, device, latest }: TabLoadInput) {
  const { commands } = await listCommands(sql, { deviceId: device.id, limit: SCRIPT_LISTING_WINDOW });
  const lists = commands.filter((c) => c.type === "list_scripts");
  const answered = lists.find((c) => c.status === "succeeded" && listedScripts(c));
  return {
    scripts: {
      reported: reportedScripts(latest),
      listing: answered ? { command: answered, scripts: listedScripts(answered)! } : undefined,
      pendingList: lists.find(
        (c) =>
          (c.status === "queued" || c.status === "delivered") &&
          (!answered || c.queuedAt.getTime() >= answered.queuedAt.getTime()),
      ),
    },
  } satisfies Partial<DeviceDetailProps>;
}

export async function loadCommandsTab({ sql, device, query }: TabLoadInput) {
  const cursor = typeof query.cursor === "string" && query.cursor !== "" ? query.cursor : undefined;
  const [page, unmatched] = await Promise.all([
    listCommands(sql, { deviceId: device.id, limit: COMMANDS_PAGE, cursor }),
    listUnmatchedResults(sql, device.id),
  ]);
  return {
    commands: { commands: page.commands, next: page.nextCursor, cursor, unmatched },
  } satisfies Partial<DeviceDetailProps>;
}
