// Offline alerts: devices silent past the Settings window, and alerts of devices that went away.
import { deviceSummaries, silentApprovedDevices } from "../devices/service";
import type { Config } from "../platform/config";
import type { Sql } from "../platform/database";
import { DEFAULT_OFFLINE_ALERT_MINUTES, readConsoleSettings } from "../settings/service";
import { openAlert, resolveAlertsOfRemovedDevices } from "./lifecycle";
import { type NotifyPolicy, notifyPolicy } from "./notifications/queue";

/**
 * Offline alerts (reference §7.4): approved devices silent beyond Settings' offline window get one
 * open `offline` alert; devices seen again since their alert are resolved here too (the heartbeat
 * path resolves them through evaluation; this catches a device whose telemetry was not evaluated).
 */
export async function checkOfflineDevices(
  sql: Sql,
  config: Config,
): Promise<{ opened: number; resolvedRemoved: number }> {
  const settings = await readConsoleSettings(sql, {
    onlineWindowSeconds: config.deviceOnlineWindowSeconds,
    telemetryRetentionDays: config.telemetryRetentionDays,
  });
  const minutes = settings.offlineAlertMinutes ?? DEFAULT_OFFLINE_ALERT_MINUTES;
  const policy = await notifyPolicy(config, sql);
  const silent = await silentApprovedDevices(sql, minutes);
  let opened = 0;
  for (const device of silent) {
    const alert = await sql.begin((tx) =>
      openAlert(
        tx as unknown as Sql,
        {
          type: "offline",
          severity: "critical",
          message: `Device hasn't reported in ${minutes} minutes`,
          deviceId: device.id,
          ruleId: null,
          value: null,
        },
        policy,
      ),
    );
    if (alert) opened++;
  }
  const resolvedRemoved = await resolveRemovedDevices(sql, policy);
  return { opened, resolvedRemoved };
}

/** Open alerts of devices that were deleted, rejected or revoked are resolved (`device_removed`). */
async function resolveRemovedDevices(sql: Sql, policy: NotifyPolicy): Promise<number> {
  const open = await sql<{ device_id: string }[]>`
    select distinct device_id from alerts where status <> 'resolved' limit 10000`;
  const ids = open.map((r) => r.device_id);
  const devices = await deviceSummaries(sql, ids);
  const removed = ids.filter((id) => !devices.get(id)?.approved);
  return (await resolveAlertsOfRemovedDevices(sql, removed, policy)).length;
}
