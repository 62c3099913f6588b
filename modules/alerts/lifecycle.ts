import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import type { AlertJson, AlertStatus, AlertType, Severity } from "./model";
import { type NotifyPolicy, queueNotifications } from "./notifications/queue";

/**
 * Alert lifecycle: active → acknowledged (operator, optional note) → resolved (automatically or by
 * an operator). Every change announces itself on the console's live channel in its transaction,
 * so the dashboard count and device pages update, and queues notifications on open and resolve.
 */
export interface Alert {
  id: string;
  type: AlertType;
  status: AlertStatus;
  severity: Severity;
  message: string;
  deviceId: string;
  ruleId: number | null;
  value: string | null;
  triggeredAt: Date;
  acknowledgedAt: Date | null;
  acknowledgedBy: string | null;
  ackNote: string | null;
  resolvedAt: Date | null;
  resolvedBy: string | null;
  resolution: string | null;
}

export type AlertRow = {
  id: string;
  type: string;
  status: string;
  severity: string;
  message: string;
  device_id: string;
  rule_id: number | null;
  value: string | null;
  triggered_at: Date;
  acknowledged_at: Date | null;
  acknowledged_by: string | null;
  ack_note: string | null;
  resolved_at: Date | null;
  resolved_by: string | null;
  resolution: string | null;
};

export function toAlert(r: AlertRow): Alert {
  return {
    id: r.id,
    type: r.type as AlertType,
    status: r.status as AlertStatus,
    severity: r.severity as Severity,
    message: r.message,
    deviceId: r.device_id,
    ruleId: r.rule_id,
    value: r.value,
    triggeredAt: r.triggered_at,
    acknowledgedAt: r.acknowledged_at,
    acknowledgedBy: r.acknowledged_by,
    ackNote: r.ack_note,
    resolvedAt: r.resolved_at,
    resolvedBy: r.resolved_by,
    resolution: r.resolution,
  };
}

export function alertJson(a: Alert): AlertJson {
  return {
    id: a.id,
    type: a.type,
    status: a.status,
    severity: a.severity,
    message: a.message,
    device_id: a.deviceId,
    rule_id: a.ruleId,
    value: a.value,
    triggered_at: a.triggeredAt.toISOString(),
    acknowledged_at: a.acknowledgedAt?.toISOString() ?? null,
    acknowledged_by: a.acknowledgedBy,
    ack_note: a.ackNote,
    resolved_at: a.resolvedAt?.toISOString() ?? null,
    resolved_by: a.resolvedBy,
    resolution: a.resolution,
  };
}

async function announce(sql: Sql, deviceIds: string[]) {
  await sql`select pg_notify('outpost_live', 'devices')`;
  for (const id of new Set(deviceIds)) await sql`select pg_notify('outpost_live', ${`device:${id}`})`;
}

export interface OpenAlert {
  type: AlertType;
  severity: Severity;
  message: string;
  deviceId: string;
  ruleId: number | null;
  value: string | null;
  /** Extra email recipients (the rule's). */
  recipients?: string[];
}

/**
 * Opens an alert unless one is already open for (device, rule) or (device, offline): the partial
 * unique indexes make this a no-op on retries. Returns the new alert, or undefined.
 * Call inside the evaluation transaction.
 */
export async function openAlert(sql: Sql, open: OpenAlert, policy: NotifyPolicy): Promise<Alert | undefined> {
  const [row] = await sql<AlertRow[]>`
    insert into alerts (id, type, status, severity, message, device_id, rule_id, value)
    values (${Bun.randomUUIDv7()}::uuid, ${open.type}, 'active', ${open.severity}, ${open.message},
      ${open.deviceId}::uuid, ${open.ruleId}, ${open.value})
    on conflict do nothing returning *`;
  if (!row) return undefined;
  const alert = toAlert(row);
  await announce(sql, [alert.deviceId]);
  await queueNotifications(sql, alert, "trigger", policy, open.recipients ?? []);
  return alert;
}

/** Resolves the open alerts matched by `where` (automatically: by is null). */
export async function resolveOpen(
  sql: Sql,
  match: { deviceId: string; ruleId?: number; type: AlertType },
  resolution: { message?: string; how: string },
  policy: NotifyPolicy,
  recipients: string[] = [],
): Promise<Alert[]> {
  const rows = await sql<AlertRow[]>`
    update alerts set status = 'resolved', resolved_at = now(), resolution = ${resolution.how},
      message = coalesce(${resolution.message ?? null}, message), updated_at = now()
    where device_id = ${match.deviceId}::uuid and type = ${match.type} and status <> 'resolved'
      and (${match.ruleId ?? null}::int is null or rule_id = ${match.ruleId ?? null})
    returning *`;
  const resolved = rows.map(toAlert);
  if (resolved.length > 0) await announce(sql, [match.deviceId]);
  for (const alert of resolved) await queueNotifications(sql, alert, "resolve", policy, recipients);
  return resolved;
}

/**
 * Resolves every open alert of these devices (they were deleted, rejected or revoked: nothing will ever
 * clear them) and forgets their rule states. History stays; notifications say they were resolved.
 */
export async function resolveAlertsOfRemovedDevices(
  sql: Sql,
  deviceIds: string[],
  policy: NotifyPolicy,
): Promise<Alert[]> {
  if (deviceIds.length === 0) return [];
  const rows = await sql<AlertRow[]>`
    update alerts set status = 'resolved', resolved_at = now(), resolution = 'device_removed', updated_at = now()
    where device_id = any(${deviceIds}::uuid[]) and status <> 'resolved'
    returning *`;
  await sql`delete from alert_rule_states where device_id = any(${deviceIds}::uuid[])`;
  const resolved = rows.map(toAlert);
  if (resolved.length > 0) await announce(sql, deviceIds);
  for (const alert of resolved) await queueNotifications(sql, alert, "resolve", policy, []);
  return resolved;
}

export const alertNotFound = () => new AppError(404, "not_found", "Alert not found");

export async function getAlert(sql: Sql, id: string): Promise<Alert | undefined> {
  if (!isUuid(id)) return undefined;
  const [row] = await sql<AlertRow[]>`select * from alerts where id = ${id}::uuid`;
  return row && toAlert(row);
}

const NOTE_MAX = 1000;

/**
 * Acknowledges or resolves alerts by hand. Already-resolved alerts are left alone (and acknowledging
 * one that is acknowledged keeps the first who/when). Returns the alerts changed.
 */
export async function changeStatus(
  sql: Sql,
  ids: string[],
  change: { status: "acknowledged" | "resolved"; note?: string | undefined; by: string },
  policy: NotifyPolicy,
): Promise<Alert[]> {
  const valid = ids.filter(isUuid).slice(0, 500);
  if (valid.length === 0) return [];
  const note = change.note?.trim() ? change.note.trim().slice(0, NOTE_MAX) : null;
  return sql.begin(async (tx) => {
    const rows =
      change.status === "acknowledged"
        ? await tx<AlertRow[]>`
            update alerts set status = 'acknowledged', acknowledged_at = now(), acknowledged_by = ${change.by},
              ack_note = ${note}, updated_at = now()
            where id = any(${valid}::uuid[]) and status = 'active' returning *`
        : await tx<AlertRow[]>`
            update alerts set status = 'resolved', resolved_at = now(), resolved_by = ${change.by},
              resolution = 'manual', ack_note = coalesce(${note}, ack_note), updated_at = now()
            where id = any(${valid}::uuid[]) and status <> 'resolved' returning *`;
    const changed = rows.map(toAlert);
    if (changed.length > 0)
      await announce(
        tx as unknown as Sql,
        changed.map((a) => a.deviceId),
      );
    if (change.status === "resolved") {
      for (const alert of changed)
        await queueNotifications(tx as unknown as Sql, alert, "resolve", policy, []);
    }
    return changed;
  }) as Promise<Alert[]>;
}

/** Open (active + acknowledged) alerts, for the dashboard. */
export async function countOpenAlerts(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from alerts where status <> 'resolved'`;
  return row!.n;
}

/** Deletes resolved alerts (and their notification records) older than the retention. */
export async function deleteExpiredAlerts(sql: Sql, retentionDays: number): Promise<number> {
  const rows = await sql`
    with gone as (
      delete from alerts where status = 'resolved' and resolved_at < now() - make_interval(days => ${retentionDays})
      returning id
    ), notes as (delete from alert_notifications where alert_id in (select id from gone))
    select id from gone`;
  return rows.length;
}
