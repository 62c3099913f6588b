import { TunnelHostKeySection } from "../../modules/remote-access/pages";
import type { ConsoleSettings } from "../../modules/settings/store";
import { Badge, CsrfField, FieldError, PostButton, Time } from "../components";
import type { PageContext } from "../layout";

export interface OperatorRow {
  id: string;
  email: string;
  role: "admin" | "operator" | "viewer";
  disabledAt: Date | null;
  lastLoginAt: Date | null;
  createdAt: Date;
}

type Errors = Partial<Record<string, string>>;
type Values = Partial<Record<string, string>>;

export interface ConsoleSettingsProps {
  console?: ConsoleSettings;
  operators?: OperatorRow[];
  monitoringErrors?: Errors;
  monitoringValues?: Values;
  notificationErrors?: Errors;
  notificationValues?: Values;
  newOperator?: { email: string; password: string };
  operatorErrors?: Errors;
  operatorValues?: Values;
  /** The tunnel SSH server's host key fingerprint (remote access). */
  tunnelFingerprint?: string;
}

const minutes = (seconds: number) => String(Math.round((seconds / 60) * 100) / 100);

function NumberField(props: {
  name: string;
  label: string;
  help: string;
  value: string;
  error: string | undefined;
  min: number;
  max: number;
  unit: string;
}) {
  return (
    <label>
      <span safe>{props.label}</span>
      <span class="input-unit">
        <input
          type="number"
          name={props.name}
          value={props.value}
          min={String(props.min)}
          max={String(props.max)}
          step="1"
          required
          inputmode="numeric"
          aria-invalid={props.error ? "true" : undefined}
        />
        <span class="muted" safe>
          {props.unit}
        </span>
      </span>
      <span class="help" safe>
        {props.help}
      </span>
      <FieldError message={props.error} />
    </label>
  );
}

export function ConsoleSettingsSections({
  ctx,
  props,
  selfId,
}: {
  ctx: PageContext;
  props: ConsoleSettingsProps;
  selfId: string | undefined;
}) {
  const settings = props.console;
  if (!settings) return "";
  const mErr = props.monitoringErrors ?? {};
  const mVal = props.monitoringValues ?? {};
  const nErr = props.notificationErrors ?? {};
  const nVal = props.notificationValues ?? {};
  const oErr = props.operatorErrors ?? {};
  const oVal = props.operatorValues ?? {};
  return (
    <>
      <TunnelHostKeySection fingerprint={props.tunnelFingerprint} />
      <section class="card" id="monitoring">
        <div class="card-head">
          <h2>Monitoring</h2>
        </div>
        <form method="post" action="/settings/monitoring" class="settings-form" novalidate>
          <CsrfField token={ctx.csrfToken} />
          <div class="form-grid">
            <NumberField
              name="online_window_minutes"
              label="Online window"
              unit="minutes"
              help={`A device is online when it sent a heartbeat within this time. Default ${minutes(settings.defaults.onlineWindowSeconds)}.`}
              value={mVal.online_window_minutes ?? minutes(settings.onlineWindowSeconds)}
              error={mErr.online_window_minutes}
              min={1}
              max={1440}
            />
            <NumberField
              name="offline_alert_minutes"
              label="Offline-alert window"
              unit="minutes"
              help={`Silence after which an offline alert is raised. Default ${settings.defaults.offlineAlertMinutes}.`}
              value={mVal.offline_alert_minutes ?? String(settings.offlineAlertMinutes)}
              error={mErr.offline_alert_minutes}
              min={1}
              max={10080}
            />
            <NumberField
              name="telemetry_retention_days"
              label="Telemetry retention"
              unit="days"
              help={`Stored heartbeats older than this are deleted daily. Default ${settings.defaults.telemetryRetentionDays}.`}
              value={mVal.telemetry_retention_days ?? String(settings.telemetryRetentionDays)}
              error={mErr.telemetry_retention_days}
              min={1}
              max={3650}
            />
          </div>
          <div class="actions">
            <button class="btn primary" type="submit">
              Save monitoring settings
            </button>
          </div>
        </form>
      </section>
      <section class="card" id="notifications">
        <div class="card-head">
          <h2>Notifications</h2>
        </div>
        <form method="post" action="/settings/notifications" class="settings-form" novalidate>
          <CsrfField token={ctx.csrfToken} />
          <div class="form-grid two-col">
            <label>
              Alert email recipient
              <input
                type="email"
                name="notification_email"
                maxlength="254"
                autocomplete="email"
                placeholder="ops@example.com"
                value={nVal.notification_email ?? settings.notificationEmail ?? ""}
                aria-invalid={nErr.notification_email ? "true" : undefined}
              />
              <span class="help">Leave blank to send no email.</span>
              <FieldError message={nErr.notification_email} />
            </label>
            <label>
              {settings.webhookConfigured ? "New webhook URL" : "Webhook URL"}
              <input
                type="url"
                name="webhook_url"
                maxlength="2000"
                autocomplete="off"
                placeholder="https://hooks.example.com/outpost"
                value={nVal.webhook_url ?? ""}
                aria-invalid={nErr.webhook_url ? "true" : undefined}
              />
              <span class="help">
                {settings.webhookConfigured
                  ? "A webhook is configured; its URL is not shown. Leave blank to keep it."
                  : "HTTPS only, and the host must resolve to public addresses."}
              </span>
              <FieldError message={nErr.webhook_url} />
            </label>
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
      </section>
      <section class="card" id="operators">
        <div class="card-head">
          <h2>Operators</h2>
        </div>
        <p class="muted">
          Admins change settings and tokens, operators act on devices, viewers only read. A disabled operator
          is signed out at once.
        </p>
        {props.newOperator ? (
          <div class="flash success" role="status">
            <div>
              <strong safe>{`${props.newOperator.email} can now sign in.`}</strong> Give them this initial
              password over a safe channel; it is shown only once.
              <div class="secret" id="new-operator-password" safe>
                {props.newOperator.password}
              </div>
              <button type="button" class="btn small" data-copy="new-operator-password">
                Copy
              </button>
            </div>
          </div>
        ) : (
          ""
        )}
        <form
          method="post"
          action="/settings/operators"
          class="inline-form"
          style="margin-bottom: 1rem"
          novalidate
        >
          <CsrfField token={ctx.csrfToken} />
          <label>
            Email
            <input
              type="email"
              name="email"
              required
              maxlength="254"
              value={oVal.email ?? ""}
              aria-invalid={oErr.email ? "true" : undefined}
            />
            <FieldError message={oErr.email} />
          </label>
          <label style="flex: 0 1 160px">
            Role
            <select name="role">
              {(["viewer", "operator", "admin"] as const).map((role) => (
                <option value={role} selected={(oVal.role ?? "viewer") === role}>
                  {role}
                </option>
              ))}
            </select>
          </label>
          <button class="btn primary" type="submit">
            Add operator
          </button>
        </form>
        <div class="table-wrap">
          <table class="stack-sm">
            <thead>
              <tr>
                <th>Email</th>
                <th>Role</th>
                <th>Status</th>
                <th class="hide-sm">Last sign-in</th>
                <th>
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {(props.operators ?? []).map((operator) => (
                <tr>
                  <td data-label="Email" safe>
                    {operator.email}
                  </td>
                  <td data-label="Role">
                    <form method="post" action={`/settings/operators/${operator.id}/role`} class="row-form">
                      <CsrfField token={ctx.csrfToken} />
                      <label class="visually-hidden" for={`role-${operator.id}`}>
                        Role
                      </label>
                      <select name="role" id={`role-${operator.id}`}>
                        {(["viewer", "operator", "admin"] as const).map((role) => (
                          <option value={role} selected={operator.role === role}>
                            {role}
                          </option>
                        ))}
                      </select>
                      <button class="btn small" type="submit">
                        Change
                      </button>
                    </form>
                  </td>
                  <td data-label="Status">
                    {operator.disabledAt ? (
                      <Badge tone="danger" label="disabled" />
                    ) : (
                      <Badge tone="ok" label="active" />
                    )}
                  </td>
                  <td class="hide-sm">
                    <Time value={operator.lastLoginAt} />
                  </td>
                  <td class="row-actions">
                    {operator.id === selfId ? (
                      <span class="muted small">you</span>
                    ) : operator.disabledAt ? (
                      <PostButton
                        action={`/settings/operators/${operator.id}/enable`}
                        csrfToken={ctx.csrfToken}
                        label="Enable"
                      />
                    ) : (
                      <PostButton
                        action={`/settings/operators/${operator.id}/disable`}
                        csrfToken={ctx.csrfToken}
                        label="Disable"
                        tone="danger"
                        confirm={`Disable ${operator.email}? They are signed out at once.`}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </>
  );
}
