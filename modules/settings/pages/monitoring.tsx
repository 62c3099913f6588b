import { Badge, CsrfField, PostButton } from "../../../ui/components";
import { CheckboxField, NumberField, TextField } from "../../../ui/form";
import type { PageContext } from "../../../ui/layout";
import { Card } from "../../../ui/table";
import { type ConsoleSettings, LIMITS, RECIPIENTS_MAX, WEBHOOK_URL_MAX } from "../store";

type Errors = Partial<Record<string, string>>;
type Values = Partial<Record<string, string>>;

export interface MonitoringSectionsProps {
  console?: ConsoleSettings;
  monitoringErrors?: Errors;
  monitoringValues?: Values;
  notificationErrors?: Errors;
  notificationValues?: Values;
}

const minutes = (seconds: number) => String(Math.round((seconds / 60) * 100) / 100);

function MonitoringSection({ ctx, settings, props }: SectionProps) {
  const errors = props.monitoringErrors ?? {};
  const values = props.monitoringValues ?? {};
  return (
    <Card title="Monitoring" id="monitoring">
      <form method="post" action="/settings/monitoring" class="settings-form" novalidate>
        <CsrfField token={ctx.csrfToken} />
        <div class="form-grid">
          <NumberField
            name="online_window_minutes"
            label="Online window"
            unit="minutes"
            help={`A device is online when it sent a heartbeat within this time. Default ${minutes(settings.defaults.onlineWindowSeconds)}.`}
            value={values.online_window_minutes ?? minutes(settings.onlineWindowSeconds)}
            error={errors.online_window_minutes}
            {...LIMITS.onlineWindowMinutes}
          />
          <NumberField
            name="offline_alert_minutes"
            label="Offline-alert window"
            unit="minutes"
            help={`Approved devices silent this long get an offline alert (checked every minute). Default ${settings.defaults.offlineAlertMinutes}.`}
            value={values.offline_alert_minutes ?? String(settings.offlineAlertMinutes)}
            error={errors.offline_alert_minutes}
            {...LIMITS.offlineAlertMinutes}
          />
          <NumberField
            name="telemetry_retention_days"
            label="Telemetry retention"
            unit="days"
            help={`Stored heartbeats older than this are deleted daily. Default ${settings.defaults.telemetryRetentionDays}.`}
            value={values.telemetry_retention_days ?? String(settings.telemetryRetentionDays)}
            error={errors.telemetry_retention_days}
            {...LIMITS.telemetryRetentionDays}
          />
        </div>
        <div class="actions">
          <button class="btn primary" type="submit">
            Save monitoring settings
          </button>
        </div>
      </form>
    </Card>
  );
}

function NotificationsSection({ ctx, settings, props }: SectionProps) {
  const errors = props.notificationErrors ?? {};
  const values = props.notificationValues ?? {};
  return (
    <Card title="Notifications" id="notifications">
      <p class="muted">
        Where alert notifications go: email (needs SMTP_URL) and a webhook signed with the secret below
        (docs/alerts.md).
      </p>
      <form method="post" action="/settings/notifications" class="settings-form" novalidate>
        <CsrfField token={ctx.csrfToken} />
        <div class="form-grid two-col">
          <TextField
            name="notification_email"
            label="Alert email recipients"
            type="text"
            maxLength={RECIPIENTS_MAX}
            autocomplete="email"
            placeholder="ops@example.com"
            value={values.notification_email ?? settings.notificationEmail ?? ""}
            error={errors.notification_email}
            help="One or several addresses, separated by commas. Leave blank to send no email."
          />
          <TextField
            name="webhook_url"
            label={settings.webhookConfigured ? "New webhook URL" : "Webhook URL"}
            type="url"
            maxLength={WEBHOOK_URL_MAX}
            autocomplete="off"
            placeholder="https://hooks.example.com/outpost"
            value={values.webhook_url ?? ""}
            error={errors.webhook_url}
            help={
              settings.webhookConfigured
                ? "A webhook is configured; its URL is not shown. Leave blank to keep it."
                : "HTTPS only, and the host must resolve to public addresses."
            }
          />
        </div>
        {settings.webhookConfigured ? (
          <CheckboxField name="clear_webhook" value="on">
            <span>Remove the configured webhook</span>
          </CheckboxField>
        ) : (
          ""
        )}
        <div class="actions">
          <button class="btn primary" type="submit">
            Save notification settings
          </button>
          {settings.webhookConfigured ? (
            <Badge tone="ok" label="webhook configured" />
          ) : (
            <Badge label="no webhook" />
          )}
        </div>
      </form>
      {/* Served by the alerts feature (modules/alerts/settings-routes.tsx). */}
      <div class="actions" style="margin-top: 1rem">
        <PostButton
          action="/settings/notifications/webhook-secret"
          csrfToken={ctx.csrfToken}
          label="Generate webhook signing secret"
          confirm="A new secret replaces the current one: receivers must be updated. Continue?"
        />
        <PostButton
          action="/settings/notifications/test"
          csrfToken={ctx.csrfToken}
          label="Send test notification"
        />
      </div>
    </Card>
  );
}

interface SectionProps {
  ctx: PageContext;
  settings: ConsoleSettings;
  props: MonitoringSectionsProps;
}

export function MonitoringSections({ ctx, props }: { ctx: PageContext; props: MonitoringSectionsProps }) {
  const settings = props.console;
  if (!settings) return "";
  return (
    <>
      <MonitoringSection ctx={ctx} settings={settings} props={props} />
      <NotificationsSection ctx={ctx} settings={settings} props={props} />
    </>
  );
}
