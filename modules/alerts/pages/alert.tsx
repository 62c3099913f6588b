import { Badge, CsrfField, PageHead, PostButton, Time } from "../../../ui/components";
import { Hidden, TextField } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { Card, DataTable } from "../../../ui/table";
import type { DeviceBrief } from "../../devices/service";
import type { Alert } from "../lifecycle";
import type { NotificationAttempt } from "../notifications/deliver";
import { StatusBadge, severityTone } from "./list";

export interface AlertPageProps {
  alert: Alert;
  device: DeviceBrief | undefined;
  ruleName: string | undefined;
  notifications: NotificationAttempt[];
  canManage: boolean;
}

function Row({ label, children }: { label: string; children: JSX.Element }) {
  return (
    <>
      <dt safe>{label}</dt>
      <dd>{children}</dd>
    </>
  );
}

const text = (value: string | null | undefined) => <span safe>{value ?? "—"}</span>;

/** One alert: what, where, since when, who acknowledged/resolved it, and every notification attempt. */
export function AlertPage({ ctx, props }: { ctx: PageContext; props: AlertPageProps }) {
  const a = props.alert;
  return (
    <Layout ctx={ctx} title="Alert">
      <PageHead title={a.message} subtitle={`${a.type} alert`} />
      <Card title="Alert">
        <dl class="kv">
          <Row label="Status">
            <StatusBadge alert={a} />
          </Row>
          <Row label="Severity">
            <Badge tone={severityTone(a.severity)} label={a.severity} />
          </Row>
          <Row label="Device">
            <a href={`/devices/${a.deviceId}`} safe>
              {props.device?.name ?? props.device?.macAddress ?? a.deviceId}
            </a>
          </Row>
          <Row label="Rule">{text(props.ruleName ?? (a.ruleId ? `#${a.ruleId} (deleted)` : null))}</Row>
          <Row label="Value">{text(a.value)}</Row>
          <Row label="Triggered">
            <Time value={a.triggeredAt} />
          </Row>
          <Row label="Acknowledged">
            {a.acknowledgedAt ? (
              <span>
                <Time value={a.acknowledgedAt} /> <span safe>{`by ${a.acknowledgedBy ?? "?"}`}</span>
              </span>
            ) : (
              text(null)
            )}
          </Row>
          <Row label="Note">{text(a.ackNote)}</Row>
          <Row label="Resolved">
            {a.resolvedAt ? (
              <span>
                <Time value={a.resolvedAt} />{" "}
                <span safe>
                  {a.resolvedBy ? `by ${a.resolvedBy}` : `automatically (${a.resolution ?? "auto"})`}
                </span>
              </span>
            ) : (
              text(null)
            )}
          </Row>
        </dl>
        {props.canManage && a.status !== "resolved" ? (
          <div class="actions">
            {a.status === "active" ? (
              <form method="post" action="/alerts/bulk" class="inline-form">
                <CsrfField token={ctx.csrfToken} />
                <Hidden name="ids" value={a.id} />
                <Hidden name="back" value={`/alerts/${a.id}`} />
                <TextField name="note" label="Note (optional)" value="" maxLength={1000} />
                <button class="btn" type="submit" name="action" value="acknowledge">
                  Acknowledge
                </button>
              </form>
            ) : (
              ""
            )}
            <PostButton
              action="/alerts/bulk"
              csrfToken={ctx.csrfToken}
              label="Resolve"
              tone="danger"
              fields={{ ids: a.id, action: "resolve", back: `/alerts/${a.id}` }}
            />
          </div>
        ) : (
          ""
        )}
      </Card>
      <Card title="Notifications">
        <DataTable
          id="notification-attempts"
          rows={props.notifications}
          empty="No notification was sent for this alert (none configured, or suppressed)."
          columns={[
            { header: "Channel", text: (n) => n.channel },
            { header: "Event", text: (n) => n.event },
            {
              header: "Status",
              render: (n) => (
                <Badge
                  tone={
                    n.status === "sent"
                      ? "ok"
                      : n.status === "failed"
                        ? "danger"
                        : n.status === "pending"
                          ? "warn"
                          : undefined
                  }
                  label={n.status}
                />
              ),
            },
            { header: "Attempts", class: "num", text: (n) => n.attempts },
            { header: "Last attempt", render: (n) => <Time value={n.lastAttemptAt} /> },
            { header: "Last error", class: "muted", text: (n) => n.lastError },
          ]}
        />
      </Card>
    </Layout>
  );
}

/** The device page's alerts panel (an htmx fragment, refreshed on live device events). */
export function DeviceAlertsPanel({ deviceId, alerts }: { deviceId: string; alerts: Alert[] }) {
  return (
    <section
      class="card"
      id="device-alerts"
      hx-get={`/alerts/device/${deviceId}`}
      hx-trigger="live:device-self from:body"
      hx-swap="outerHTML"
    >
      <div class="card-head">
        <h2>Alerts</h2>
        <a class="btn small" href={`/alerts?tab=history&device=${deviceId}`}>
          All alerts of this device
        </a>
      </div>
      <DataTable
        rows={alerts}
        empty="No alerts for this device."
        columns={[
          { header: "Severity", render: (a) => <Badge tone={severityTone(a.severity)} label={a.severity} /> },
          {
            header: "Message",
            render: (a) => (
              <a href={`/alerts/${a.id}`} safe>
                {a.message}
              </a>
            ),
          },
          { header: "Triggered", render: (a) => <Time value={a.triggeredAt} /> },
          { header: "Status", render: (a) => <StatusBadge alert={a} /> },
        ]}
      />
    </section>
  );
}
