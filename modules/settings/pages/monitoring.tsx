import { Badge, CsrfField } from "../../../ui/components";
import { NumberField, TextField } from "../../../ui/form";
import type { PageContext } from "../../../ui/layout";
import { Card } from "../../../ui/table";
import { type ConsoleSettings, EMAIL_MAX, LIMITS, WEBHOOK_URL_MAX } from "../store";

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
            help={`Silence after which an offline alert will be raised; alerts are not built yet, so nothing uses it today. Default ${settings.defaults.offlineAlertMinutes}.`}
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
        Where alert notifications will go. Alerts are not built yet: these are stored, and nothing is sent.
      </p>
      <form method="post" action="/settings/notifications" class="settings-form" novalidate>
        <CsrfField token={ctx.csrfToken} />
        <div class="form-grid two-col">
          <TextField
            name="notification_email"
            label="Alert email recipient"
            type="email"
            maxLength={EMAIL_MAX}
            autocomplete="email"
            placeholder="ops@example.com"
            value={values.notification_email ?? settings.notificationEmail ?? ""}
            error={errors.notification_email}
            help="Leave blank to send no email."
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
          <label class="checkbox">
            <input type="checkbox" name="clear_webhook" value="on" />
            <span>Remove the configured webhook</span>
          </label>
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
