import { escapeHtml } from "@kitajs/html";
import { deviceSummaries } from "../../devices/service";
import type { Config } from "../../platform/config";
import type { Sql } from "../../platform/database";
import { webhookSecret, webhookUrl } from "../../settings/service";
import { type Alert, getAlert } from "../lifecycle";
import type { WebhookBody } from "../model";
import { ruleNames } from "../rules";
import { type EmailMessage, sendEmail } from "./email";
import { postWebhook } from "./webhook";

/** Deliveries are retried (graphile-worker's exponential backoff) until this long after the alert changed. */
export const RETRY_WINDOW_MS = 24 * 3600 * 1000;

type NotificationRow = {
  id: string;
  alert_id: string | null;
  channel: string;
  event: string;
  status: string;
  recipients: string[];
  created_at: Date;
};

export async function webhookBody(sql: Sql, alert: Alert): Promise<WebhookBody> {
  const device = (await deviceSummaries(sql, [alert.deviceId])).get(alert.deviceId);
  const rule = alert.ruleId === null ? undefined : (await ruleNames(sql, [alert.ruleId])).get(alert.ruleId);
  return {
    id: alert.id,
    type: alert.type,
    severity: alert.severity,
    status: alert.status,
    message: alert.message,
    device: {
      id: alert.deviceId,
      name: device?.name ?? null,
      mac_address: device?.macAddress ?? null,
      product_name: device?.productName ?? null,
    },
    rule: alert.ruleId !== null && rule ? { id: alert.ruleId, name: rule } : null,
    triggered_at: alert.triggeredAt.toISOString(),
    resolved_at: alert.resolvedAt?.toISOString() ?? null,
  };
}

/**
 * Characters that could make one value read as several lines or reorder what is shown: C0 and C1
 * controls (CR, LF, tab…), DEL, the line and paragraph separators and the bidirectional overrides.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is escaped here
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const ESCAPES: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `value` on one line: every unprintable character written as an escape (`\n`, `\u202e`). */
function oneLine(value: string): string {
  return value.replace(
    UNPRINTABLE,
    (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Text a device (or a person) typed, quoted as data on one line: its quotes and backslashes escaped. */
function quoted(value: string): string {
  return `"${oneLine(value.replace(/["\\]/g, "\\$&"))}"`;
}

/**
 * Subject and body: what, where, since when, and a link to the alert. A device names itself
 * (`metadata.name`, its product) and its telemetry names the rule's field: such text is shown quoted on
 * one line and marked as the device's, so no value can pass for a line of the email (`Bcc: …`).
 */
export function emailFor(body: WebhookBody, event: string, baseUrl: string, to: string[]): EmailMessage {
  const where = body.device.name ?? body.device.mac_address ?? body.device.id;
  const what = event === "resolve" ? "Resolved" : `[${body.severity}]`;
  const link = `${baseUrl}/alerts/${body.id}`;
  const device = body.device.name
    ? `Device: ${quoted(body.device.name)} (name reported by the device)`
    : `Device: ${oneLine(where)}`;
  const lines = [
    oneLine(body.message),
    device,
    body.device.product_name ? `Product: ${quoted(body.device.product_name)} (reported by the device)` : "",
    body.device.mac_address ? `MAC address: ${oneLine(body.device.mac_address)}` : "",
    body.rule ? `Rule: ${quoted(body.rule.name)}` : `Type: ${body.type}`,
    `Since: ${body.triggered_at}`,
    body.resolved_at ? `Resolved: ${body.resolved_at}` : "",
    `Open: ${link}`,
  ].filter(Boolean);
  return {
    to,
    subject: oneLine(`${what} ${body.message} on ${where}`),
    text: `${lines.join("\n")}\n`,
    html: `<p>${lines.map((l) => escapeHtml(l)).join("<br>")}</p>`,
  };
}

async function attempt(config: Config, sql: Sql, row: NotificationRow, alert: Alert) {
  const body = await webhookBody(sql, alert);
  if (row.channel === "email")
    return sendEmail(config, emailFor(body, row.event, config.baseUrl, row.recipients));
  const url = await webhookUrl(sql);
  if (!url) return { ok: false as const, error: "no webhook URL is configured" };
  return postWebhook(config, url, JSON.stringify(body), await webhookSecret(sql));
}

/**
 * One delivery attempt of a notification, recorded on it (attempts, last error, sent). A failure
 * throws so graphile-worker retries with backoff, until RETRY_WINDOW_MS has passed: then the
 * notification is marked failed and the job ends.
 */
export async function deliverNotification(sql: Sql, config: Config, id: string): Promise<string> {
  const [row] = await sql<NotificationRow[]>`select * from alert_notifications where id = ${id}::uuid`;
  if (!row) return "missing";
  if (row.status !== "pending") return row.status;
  const alert = row.alert_id ? await getAlert(sql, row.alert_id) : undefined;
  if (!alert) {
    await sql`update alert_notifications set status = 'failed', last_error = 'the alert no longer exists' where id = ${id}::uuid`;
    return "failed";
  }
  const result = await attempt(config, sql, row, alert);
  if (result.ok) {
    await sql`update alert_notifications set status = 'sent', attempts = attempts + 1, last_attempt_at = now(),
      sent_at = now(), last_error = null where id = ${id}::uuid`;
    return "sent";
  }
  const expired = Date.now() - row.created_at.getTime() > RETRY_WINDOW_MS;
  await sql`update alert_notifications set attempts = attempts + 1, last_attempt_at = now(), last_error = ${result.error},
    status = ${expired ? "failed" : "pending"} where id = ${id}::uuid`;
  if (expired) return "failed";
  throw new Error(`notification ${row.channel} failed: ${result.error}`);
}

export interface NotificationAttempt {
  id: string;
  channel: string;
  event: string;
  status: string;
  attempts: number;
  lastError: string | null;
  lastAttemptAt: Date | null;
  sentAt: Date | null;
}

/** The notifications of an alert with their attempts, for its page. */
export async function alertNotifications(sql: Sql, alertId: string): Promise<NotificationAttempt[]> {
  const rows = await sql<
    {
      id: string;
      channel: string;
      event: string;
      status: string;
      attempts: number;
      last_error: string | null;
      last_attempt_at: Date | null;
      sent_at: Date | null;
    }[]
  >`select id, channel, event, status, attempts, last_error, last_attempt_at, sent_at from alert_notifications
    where alert_id = ${alertId}::uuid order by created_at, channel`;
  return rows.map((r) => ({
    id: r.id,
    channel: r.channel,
    event: r.event,
    status: r.status,
    attempts: r.attempts,
    lastError: r.last_error,
    lastAttemptAt: r.last_attempt_at,
    sentAt: r.sent_at,
  }));
}

/** Settings' "Send test notification": one email and one webhook now, outcome per channel. */
export async function sendTestNotification(
  sql: Sql,
  config: Config,
  recipients: string[],
): Promise<{ channel: string; ok: boolean; error?: string }[]> {
  const now = new Date().toISOString();
  const body: WebhookBody = {
    id: "00000000-0000-0000-0000-000000000000",
    type: "test",
    severity: "info",
    status: "active",
    message: "Test notification from Outpost",
    device: {
      id: "00000000-0000-0000-0000-000000000000",
      name: "test device",
      mac_address: null,
      product_name: null,
    },
    rule: null,
    triggered_at: now,
    resolved_at: null,
  };
  const results: { channel: string; ok: boolean; error?: string }[] = [];
  if (recipients.length > 0) {
    const sent = await sendEmail(config, emailFor(body, "trigger", config.baseUrl, recipients));
    results.push({ channel: "email", ok: sent.ok, ...(sent.ok ? {} : { error: sent.error }) });
  }
  const url = await webhookUrl(sql);
  if (url) {
    const posted = await postWebhook(config, url, JSON.stringify(body), await webhookSecret(sql));
    results.push({ channel: "webhook", ok: posted.ok, ...(posted.ok ? {} : { error: posted.error }) });
  }
  return results;
}
