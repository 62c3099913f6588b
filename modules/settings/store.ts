import { randomToken } from "../platform/crypto";
import type { Sql } from "../platform/database";
import type { DeviceSettings } from "./service";
import { type Resolver, validateWebhookUrl } from "./webhook";

/**
 * Operator-edited settings in `system_settings`, layered over the environment defaults that
 * `SettingsService.device()` starts from. A key without a row uses its default, so clearing a row (or never
 * saving) keeps the documented env behaviour. Every read here is fresh; the hot paths (a heartbeat
 * reads the device settings) go through the `SettingsService` of the app context, which caches them
 * for CACHE_MS (./service.ts).
 */
export const SETTING_KEYS = {
  onlineWindowSeconds: "online_window_seconds",
  /**
   * Not an override: the environment default of the online window, recorded by every process so
   * the live trigger (migration 0008) can use it when no operator saved a window.
   */
  onlineWindowDefault: "online_window_seconds_default",
  offlineAlertMinutes: "offline_alert_minutes",
  telemetryRetentionDays: "telemetry_retention_days",
  notifications: "notifications",
  webhookSecret: "webhook_secret",
  terminalRecordInput: "terminal_record_input",
} as const;

export const DEFAULT_OFFLINE_ALERT_MINUTES = 10;
export const LIMITS = {
  onlineWindowMinutes: { min: 1, max: 1440 },
  offlineAlertMinutes: { min: 1, max: 10_080 },
  telemetryRetentionDays: { min: 1, max: 3650 },
};

interface Stored {
  onlineWindowSeconds?: number;
  offlineAlertMinutes?: number;
  telemetryRetentionDays?: number;
  notifications?: { email: string | null; webhook_url: string | null };
  terminalRecordInput?: boolean;
}

function positiveInt(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined;
}

async function load(sql: Sql): Promise<Stored> {
  const rows = await sql<{ key: string; value: unknown }[]>`select key, value from system_settings`;
  const byKey = new Map(rows.map((r) => [r.key, r.value]));
  const notifications = byKey.get(SETTING_KEYS.notifications) as Record<string, unknown> | undefined;
  const value: Stored = {
    onlineWindowSeconds: positiveInt(byKey.get(SETTING_KEYS.onlineWindowSeconds)),
    offlineAlertMinutes: positiveInt(byKey.get(SETTING_KEYS.offlineAlertMinutes)),
    telemetryRetentionDays: positiveInt(byKey.get(SETTING_KEYS.telemetryRetentionDays)),
    notifications: notifications
      ? {
          email: typeof notifications.email === "string" ? notifications.email : null,
          webhook_url: typeof notifications.webhook_url === "string" ? notifications.webhook_url : null,
        }
      : undefined,
    terminalRecordInput: byKey.get(SETTING_KEYS.terminalRecordInput) === true,
  };
  return value;
}

/**
 * Records the env default of the online window (the SettingsService does so once per process, and
 * again when it differs). The row is no override: `load()` never reads it, so the Settings page and every reader
 * keep treating a missing `online_window_seconds` row as "use the default".
 */
export async function recordOnlineWindowDefault(sql: Sql, seconds: number): Promise<void> {
  const value = JSON.stringify(seconds);
  await sql`insert into system_settings (key, value, updated_at, updated_by)
    values (${SETTING_KEYS.onlineWindowDefault}, ${value}::jsonb, now(), 'environment')
    on conflict (key) do update set value = excluded.value, updated_at = now(), updated_by = excluded.updated_by
    where system_settings.value is distinct from excluded.value`;
}

/** The stored overrides of the device settings ({} when none). */
export async function storedDeviceSettings(sql: Sql): Promise<Partial<DeviceSettings>> {
  const stored = await load(sql);
  const result: Partial<DeviceSettings> = {};
  if (stored.onlineWindowSeconds) result.onlineWindowSeconds = stored.onlineWindowSeconds;
  if (stored.telemetryRetentionDays) result.telemetryRetentionDays = stored.telemetryRetentionDays;
  return result;
}

export interface ConsoleSettings {
  onlineWindowSeconds: number;
  offlineAlertMinutes: number;
  telemetryRetentionDays: number;
  notificationEmail: string | null;
  /** Whether a webhook URL is stored; the URL itself is never given out. */
  webhookConfigured: boolean;
  /** The defaults a key falls back to (from the environment). */
  defaults: { onlineWindowSeconds: number; offlineAlertMinutes: number; telemetryRetentionDays: number };
}

/** The settings as the Settings page shows them (stored value, else the default). */
export async function readConsoleSettings(
  sql: Sql,
  defaults: Pick<DeviceSettings, "onlineWindowSeconds" | "telemetryRetentionDays">,
): Promise<ConsoleSettings> {
  const stored = await load(sql);
  return {
    onlineWindowSeconds: stored.onlineWindowSeconds ?? defaults.onlineWindowSeconds,
    offlineAlertMinutes: stored.offlineAlertMinutes ?? DEFAULT_OFFLINE_ALERT_MINUTES,
    telemetryRetentionDays: stored.telemetryRetentionDays ?? defaults.telemetryRetentionDays,
    notificationEmail: stored.notifications?.email ?? null,
    webhookConfigured: Boolean(stored.notifications?.webhook_url),
    defaults: {
      onlineWindowSeconds: defaults.onlineWindowSeconds,
      offlineAlertMinutes: DEFAULT_OFFLINE_ALERT_MINUTES,
      telemetryRetentionDays: defaults.telemetryRetentionDays,
    },
  };
}

/** Whether new terminal sessions record keyboard input too (off unless an admin turns it on). */
export async function terminalInputRecording(sql: Sql): Promise<boolean> {
  return (await load(sql)).terminalRecordInput === true;
}

export async function setTerminalInputRecording(sql: Sql, on: boolean, by: string): Promise<void> {
  await sql`insert into system_settings (key, value, updated_at, updated_by)
    values (${SETTING_KEYS.terminalRecordInput}, ${JSON.stringify(on)}::jsonb, now(), ${by})
    on conflict (key) do update set value = excluded.value, updated_at = now(), updated_by = excluded.updated_by`;
}

/** The stored webhook URL, for the notification sender only (never rendered). */
export async function webhookUrl(sql: Sql): Promise<string | null> {
  return (await load(sql)).notifications?.webhook_url ?? null;
}

async function put(sql: Sql, entries: [string, unknown][], by: string | undefined): Promise<void> {
  await sql.begin(async (tx) => {
    for (const [key, value] of entries) {
      await tx`insert into system_settings (key, value, updated_at, updated_by)
        values (${key}, ${JSON.stringify(value)}::jsonb, now(), ${by ?? null})
        on conflict (key) do update set value = excluded.value, updated_at = now(), updated_by = excluded.updated_by`;
    }
  });
}

export type FieldErrors = Partial<Record<string, string>>;

/**
 * What a save did: errors per field (nothing saved), or the stored values before and after it (null:
 * no override, the default applies), for the audit log. Secrets never: a webhook URL is `(set)`.
 */
export type SaveOutcome =
  | { errors: FieldErrors; before?: undefined; after?: undefined }
  | { errors?: undefined; before: Record<string, unknown>; after: Record<string, unknown> };

/** The stored values as a save's outcome shows them. */
async function storedNow(sql: Sql): Promise<Record<string, unknown>> {
  const stored = await load(sql);
  return {
    online_window_minutes: stored.onlineWindowSeconds === undefined ? null : stored.onlineWindowSeconds / 60,
    offline_alert_minutes: stored.offlineAlertMinutes ?? null,
    telemetry_retention_days: stored.telemetryRetentionDays ?? null,
    notification_email: stored.notifications?.email ?? null,
    webhook_url: stored.notifications?.webhook_url ? "(set)" : null,
    webhook_url_changed: stored.notifications?.webhook_url ?? null,
  };
}

async function savedOutcome(sql: Sql, before: Record<string, unknown>, keys: string[]): Promise<SaveOutcome> {
  const after = await storedNow(sql);
  const pick = (values: Record<string, unknown>) => Object.fromEntries(keys.map((key) => [key, values[key]]));
  // Which URL is private; that it changed is not.
  if (keys.includes("webhook_url") && before.webhook_url_changed !== after.webhook_url_changed)
    after.webhook_url = after.webhook_url === null ? null : "(a new URL)";
  return { before: pick(before), after: pick(after) };
}

/** A whole number within limits, from a form field ("25" ok; "", "1.5", "25min", "0" not). */
export function wholeNumber(raw: unknown, label: string, limits: { min: number; max: number }) {
  const text = typeof raw === "string" ? raw.trim() : typeof raw === "number" ? String(raw) : "";
  if (!/^\d+$/.test(text)) return { error: `${label} must be a whole number.` };
  const value = Number(text);
  if (value < limits.min || value > limits.max) {
    return { error: `${label} must be between ${limits.min} and ${limits.max}.` };
  }
  return { value };
}

export interface MonitoringInput {
  online_window_minutes?: unknown;
  offline_alert_minutes?: unknown;
  telemetry_retention_days?: unknown;
}

/** Saves the monitoring settings, all or nothing; errors per field otherwise. */
export async function saveMonitoringSettings(
  sql: Sql,
  input: MonitoringInput,
  by?: string,
): Promise<SaveOutcome> {
  const online = wholeNumber(input.online_window_minutes, "The online window", LIMITS.onlineWindowMinutes);
  const offline = wholeNumber(
    input.offline_alert_minutes,
    "The offline-alert window",
    LIMITS.offlineAlertMinutes,
  );
  const retention = wholeNumber(
    input.telemetry_retention_days,
    "Telemetry retention",
    LIMITS.telemetryRetentionDays,
  );
  const errors: FieldErrors = {};
  if ("error" in online) errors.online_window_minutes = online.error;
  if ("error" in offline) errors.offline_alert_minutes = offline.error;
  if ("error" in retention) errors.telemetry_retention_days = retention.error;
  if (Object.keys(errors).length > 0) return { errors };
  const before = await storedNow(sql);
  await put(
    sql,
    [
      [SETTING_KEYS.onlineWindowSeconds, (online as { value: number }).value * 60],
      [SETTING_KEYS.offlineAlertMinutes, (offline as { value: number }).value],
      [SETTING_KEYS.telemetryRetentionDays, (retention as { value: number }).value],
    ],
    by,
  );
  return savedOutcome(sql, before, [
    "online_window_minutes",
    "offline_alert_minutes",
    "telemetry_retention_days",
  ]);
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const EMAIL_MAX = 254;
export const RECIPIENTS_MAX = 2000;
export { WEBHOOK_URL_MAX } from "./webhook";

export interface NotificationInput {
  notification_email?: unknown;
  webhook_url?: unknown;
  clear_webhook?: unknown;
}

/**
 * Saves the notification settings. A blank webhook field keeps the stored URL; `clear_webhook`
 * removes it; a new URL must pass validateWebhookUrl.
 */
export async function saveNotificationSettings(
  sql: Sql,
  input: NotificationInput,
  by?: string,
  resolve?: Resolver,
): Promise<SaveOutcome> {
  const errors: FieldErrors = {};
  // Several recipients, separated by commas (alerts send to each).
  const emailRaw = typeof input.notification_email === "string" ? input.notification_email.trim() : "";
  const addresses = emailRaw.split(/[\s,;]+/).filter(Boolean);
  if (
    emailRaw.length > RECIPIENTS_MAX ||
    addresses.some((address) => !EMAIL.test(address) || address.length > EMAIL_MAX)
  ) {
    errors.notification_email = "Enter valid email addresses separated by commas, or leave the field blank.";
  }
  const current = (await load(sql)).notifications?.webhook_url ?? null;
  const clear = ["on", "true", "1"].includes(String(input.clear_webhook ?? ""));
  const urlRaw = typeof input.webhook_url === "string" ? input.webhook_url.trim() : "";
  let webhook = clear ? null : current;
  if (urlRaw && !clear) {
    const checked = await validateWebhookUrl(urlRaw, resolve);
    if ("error" in checked) errors.webhook_url = checked.error;
    else webhook = checked.url;
  }
  if (Object.keys(errors).length > 0) return { errors };
  const before = await storedNow(sql);
  await put(
    sql,
    [
      [
        SETTING_KEYS.notifications,
        { email: addresses.length > 0 ? addresses.join(", ").toLowerCase() : null, webhook_url: webhook },
      ],
    ],
    by,
  );
  return savedOutcome(sql, before, ["notification_email", "webhook_url"]);
}

/** The webhook signing secret (alerts sign with it), or null until an admin generates one. */
export async function webhookSecret(sql: Sql): Promise<string | null> {
  const [row] = await sql<
    { value: unknown }[]
  >`select value from system_settings where key = ${SETTING_KEYS.webhookSecret}`;
  return typeof row?.value === "string" ? row.value : null;
}

/** Generates a new webhook signing secret and returns it: the only time it is shown. */
export async function rotateWebhookSecret(sql: Sql, by?: string): Promise<string> {
  const secret = `whsec_${randomToken(32)}`;
  await put(sql, [[SETTING_KEYS.webhookSecret, secret]], by);
  return secret;
}
