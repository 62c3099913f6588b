import type { TransactionSql } from "postgres";
import { enqueueJob } from "../../jobs/service";
import type { Config } from "../../platform/config";
import type { Sql } from "../../platform/database";
import { readConsoleSettings, webhookUrl } from "../../settings/service";
import type { Alert } from "../lifecycle";

/** What a run that may open or resolve alerts needs to know to queue their notifications. */
export interface NotifyPolicy {
  /** Flap guard: at most one trigger notification per (rule, device) in this many minutes. */
  minIntervalMinutes: number;
  /** Settings' recipients (several); empty or no SMTP_URL → no email. */
  recipients: string[];
  email: boolean;
  webhook: boolean;
}

/** Settings' recipients field holds one or several addresses separated by commas. */
export function splitRecipients(text: string | null | undefined): string[] {
  return (text ?? "")
    .split(/[\s,;]+/)
    .map((r) => r.trim().toLowerCase())
    .filter(Boolean);
}

export async function notifyPolicy(config: Config, sql: Sql): Promise<NotifyPolicy> {
  const settings = await readConsoleSettings(sql, {
    onlineWindowSeconds: config.deviceOnlineWindowSeconds,
    telemetryRetentionDays: config.telemetryRetentionDays,
  });
  return {
    minIntervalMinutes: config.alertNotifyMinIntervalMinutes,
    recipients: splitRecipients(settings.notificationEmail),
    email: Boolean(config.smtpUrl),
    webhook: Boolean(await webhookUrl(sql)),
  };
}

export const NOTIFY_TASK = "alerts_notify";
/** graphile-worker retries with exponential backoff; the sender gives up once 24 h have passed. */
export const NOTIFY_MAX_ATTEMPTS = 25;

/**
 * Records one notification per channel for an alert event and enqueues its delivery, in the
 * caller's transaction (so a rolled-back evaluation sends nothing). The flap guard suppresses a
 * trigger when this (rule, device) already notified within the interval, and the matching resolve.
 */
export async function queueNotifications(
  sql: Sql,
  alert: Alert,
  event: "trigger" | "resolve",
  policy: NotifyPolicy,
  ruleRecipients: string[],
): Promise<void> {
  const channels: string[] = [];
  if (policy.email && policy.recipients.length + ruleRecipients.length > 0) channels.push("email");
  if (policy.webhook) channels.push("webhook");
  if (channels.length === 0) return;
  let suppressed = false;
  if (event === "trigger" && alert.ruleId !== null && policy.minIntervalMinutes > 0) {
    const [recent] = await sql`
      select 1 from alert_notifications n join alerts a on a.id = n.alert_id
      where a.rule_id = ${alert.ruleId} and a.device_id = ${alert.deviceId}::uuid and a.id <> ${alert.id}::uuid
        and n.event = 'trigger' and n.status <> 'suppressed'
        and n.created_at > now() - make_interval(mins => ${policy.minIntervalMinutes})
      limit 1`;
    suppressed = Boolean(recent);
  } else if (event === "resolve") {
    const [trigger] = await sql<{ status: string }[]>`
      select status from alert_notifications where alert_id = ${alert.id}::uuid and event = 'trigger' limit 1`;
    suppressed = trigger?.status === "suppressed";
  }
  for (const channel of channels) {
    const id = Bun.randomUUIDv7();
    const recipients = channel === "email" ? [...new Set([...policy.recipients, ...ruleRecipients])] : [];
    await sql`insert into alert_notifications (id, alert_id, channel, event, status, recipients)
      values (${id}::uuid, ${alert.id}::uuid, ${channel}, ${event}, ${suppressed ? "suppressed" : "pending"},
        ${recipients}::text[])`;
    if (!suppressed) {
      await enqueueJob(sql, NOTIFY_TASK, { notificationId: id }, { maxAttempts: NOTIFY_MAX_ATTEMPTS });
    }
  }
}

/**
 * Queues the delivery of every notification still pending (a restore: graphile-worker's queue is not
 * part of a backup, alert_notifications is). Delivering one twice is harmless: a sent one is skipped.
 */
export async function requeuePendingNotifications(sql: Sql | TransactionSql): Promise<number> {
  const pending = await sql<{ id: string }[]>`
    select id from alert_notifications where status = 'pending' order by created_at`;
  for (const { id } of pending)
    await enqueueJob(sql, NOTIFY_TASK, { notificationId: id }, { maxAttempts: NOTIFY_MAX_ATTEMPTS });
  return pending.length;
}
