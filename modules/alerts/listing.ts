import { type DeviceBrief, deviceSummaries, findDeviceIds } from "../devices/service";
import { type CsvValue, keysetBatches } from "../platform/csv";
import type { Sql } from "../platform/database";
import { badRequest } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { keysetPage, parseKeysetCursor } from "../platform/keyset-cursor";
import { type Alert, type AlertRow, toAlert } from "./lifecycle";
import { ALERT_STATUSES, ALERT_TYPES, SEVERITIES } from "./model";
import { ruleNames } from "./rules";

/**
 * The filtered, sorted, keyset-paged alert list behind the Active and History tabs, the CSV export
 * and JSON:API `alerts`. `status=open` means active + acknowledged (the Active tab).
 */
export const ALERT_SORTS = ["newest", "oldest", "severity"] as const;
export type AlertSort = (typeof ALERT_SORTS)[number];
export const STATUS_FILTERS = ["open", ...ALERT_STATUSES] as const;

export interface AlertFilters {
  status?: (typeof STATUS_FILTERS)[number];
  severity?: (typeof SEVERITIES)[number];
  type?: (typeof ALERT_TYPES)[number];
  /** A device id, or text matched against MAC, product and id. */
  device?: string;
  ruleId?: number;
}

export interface AlertListOptions extends AlertFilters {
  sort?: AlertSort;
  limit?: number;
  cursor?: string;
}

export interface AlertListItem {
  alert: Alert;
  device: DeviceBrief | undefined;
  ruleName: string | undefined;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  throw badRequest(`${field} must be one of ${allowed.join(", ")}`, { field });
}

/** Filters from a query string (page or API); a wrong value is a 400 naming the field. */
export function parseAlertFilters(query: Record<string, unknown>): AlertFilters & { sort?: AlertSort } {
  const filters: AlertFilters & { sort?: AlertSort } = {};
  const status = oneOf(query.status, STATUS_FILTERS, "status");
  if (status) filters.status = status;
  const severity = oneOf(query.severity, SEVERITIES, "severity");
  if (severity) filters.severity = severity;
  const type = oneOf(query.type, ALERT_TYPES, "type");
  if (type) filters.type = type;
  const sort = oneOf(query.sort, ALERT_SORTS, "sort");
  if (sort) filters.sort = sort;
  if (typeof query.device === "string" && query.device.trim() !== "")
    filters.device = query.device.trim().slice(0, 100);
  if (query.rule !== undefined && query.rule !== "") {
    const id = Number(query.rule);
    if (!Number.isInteger(id) || id < 1 || id > 2_147_483_647)
      throw badRequest("rule must be a rule id", { field: "rule" });
    filters.ruleId = id;
  }
  return filters;
}

const RANK = (sql: Sql) => sql`case severity when 'critical' then 3 when 'warning' then 2 else 1 end`;
const TIME_KEY = `to_char(triggered_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export async function listAlerts(
  sql: Sql,
  options: AlertListOptions,
): Promise<{ items: AlertListItem[]; nextCursor: string | undefined }> {
  const limit = Math.min(Math.max(options.limit ?? 50, 1), 5000);
  const sort = options.sort ?? "newest";
  let deviceIds: string[] | null = null;
  if (options.device)
    deviceIds = isUuid(options.device) ? [options.device] : await findDeviceIds(sql, options.device);
  const statuses =
    options.status === "open" ? ["active", "acknowledged"] : options.status ? [options.status] : null;
  let after = sql``;
  if (options.cursor) {
    const values = parseKeysetCursor(options.cursor, {
      keys: sort === "severity" ? 2 : 1,
      time: sort !== "severity",
    });
    if (sort === "severity") {
      after = sql`and (${RANK(sql)}, triggered_at, id) < (${Number(values[0])}, ${values[1]!}::timestamptz, ${values[2]!}::uuid)`;
    } else if (sort === "oldest") {
      after = sql`and (triggered_at, id) > (${values[0]!}::timestamptz, ${values[1]!}::uuid)`;
    } else {
      after = sql`and (triggered_at, id) < (${values[0]!}::timestamptz, ${values[1]!}::uuid)`;
    }
  }
  const order =
    sort === "severity"
      ? sql`${RANK(sql)} desc, triggered_at desc, id desc`
      : sort === "oldest"
        ? sql`triggered_at, id`
        : sql`triggered_at desc, id desc`;
  const rows = await sql<(AlertRow & { k_time: string; k_rank: number })[]>`
    select *, ${sql.unsafe(TIME_KEY)} as k_time, ${RANK(sql)} as k_rank from alerts
    where (${statuses}::text[] is null or status = any(${statuses}::text[]))
      and (${options.severity ?? null}::text is null or severity = ${options.severity ?? null})
      and (${options.type ?? null}::text is null or type = ${options.type ?? null})
      and (${options.ruleId ?? null}::int is null or rule_id = ${options.ruleId ?? null})
      and (${deviceIds}::uuid[] is null or device_id = any(${deviceIds}::uuid[]))
      ${after}
    order by ${order} limit ${limit + 1}`;
  const { page, nextCursor } = keysetPage(rows, limit, (last) =>
    sort === "severity" ? [String(last.k_rank), last.k_time, last.id] : [last.k_time, last.id],
  );
  const alerts = page.map(toAlert);
  const devices = await deviceSummaries(sql, [...new Set(alerts.map((a) => a.deviceId))]);
  const names = await ruleNames(sql, [
    ...new Set(alerts.flatMap((a) => (a.ruleId === null ? [] : [a.ruleId]))),
  ]);
  return {
    items: alerts.map((alert) => ({
      alert,
      device: devices.get(alert.deviceId),
      ruleName: alert.ruleId === null ? undefined : names.get(alert.ruleId),
    })),
    nextCursor,
  };
}

export const ALERT_CSV_COLUMNS = [
  "id",
  "type",
  "status",
  "severity",
  "message",
  "device_id",
  "device_mac",
  "product",
  "rule_id",
  "rule",
  "value",
  "triggered_at",
  "acknowledged_at",
  "acknowledged_by",
  "ack_note",
  "resolved_at",
  "resolved_by",
  "resolution",
];

/**
 * The filtered list (its own sort), every row, one keyset page of 1,000 at a time for csvResponse:
 * memory holds one page whatever the size, and a cancelled download stops the queries.
 */
export function alertCsvBatches(sql: Sql, filters: AlertFilters & { sort?: AlertSort }) {
  return keysetBatches(
    async (cursor: string | undefined) => {
      const { items, nextCursor } = await listAlerts(sql, { ...filters, limit: 1000, cursor });
      return { items, next: nextCursor ?? undefined };
    },
    ({ alert: a, device, ruleName }): CsvValue[] => [
      a.id,
      a.type,
      a.status,
      a.severity,
      a.message,
      a.deviceId,
      device?.macAddress,
      device?.productName,
      a.ruleId,
      ruleName,
      a.value,
      a.triggeredAt,
      a.acknowledgedAt,
      a.acknowledgedBy,
      a.ackNote,
      a.resolvedAt,
      a.resolvedBy,
      a.resolution,
    ],
  );
}
