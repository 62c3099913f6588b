import { assetUrl } from "../../../ui/assets";
import { EmptyState, PageHead, Time } from "../../../ui/components";
import { Layout, type PageContext } from "../../../ui/layout";
import { ApprovalBadge, Chart, LiveStatus, OnlineBadge, StatCard } from "../../../ui/widgets";
import type { DeviceSummary } from "../../devices/service";
import type { FleetSnapshot } from "../../live/service";

export interface DashboardProps {
  counts: FleetSnapshot;
  recent: DeviceSummary[];
  activity: { t: number[]; devices: number[] };
  canManage: boolean;
  onlineWindowMinutes: number;
}

// Online and offline count approved devices only (pending ones cannot send heartbeats), so their
// links filter on approval too: the list then holds exactly the number on the card.
export const ONLINE_HREF = "/devices?approval_status=approved&connectivity_status=online";
export const OFFLINE_HREF = "/devices?approval_status=approved&connectivity_status=offline";

export function DashboardPage({ ctx, props }: { ctx: PageContext; props: DashboardProps }) {
  const { counts } = props;
  return (
    <Layout ctx={ctx} title="Dashboard">
      <link rel="stylesheet" href={assetUrl("uplot.min.css")} />
      <script src={assetUrl("uplot.min.js")} defer></script>
      <script src={assetUrl("charts.js")} defer></script>
      <script src={assetUrl("console.js")} defer></script>
      <div data-live-page="dashboard" hidden></div>
      <PageHead title="Dashboard" subtitle="Your fleet at a glance. Numbers update as devices check in.">
        <LiveStatus />
        {props.canManage ? (
          <a class="btn primary" href="/devices/new">
            Add device
          </a>
        ) : (
          ""
        )}
      </PageHead>
      <div class="grid stats">
        <StatCard href="/devices" label="Total devices" value={counts.total} live="total" />
        <StatCard
          href={ONLINE_HREF}
          label="Online"
          value={counts.online}
          live="online"
          tone="ok"
          hint={`${counts.offline.toLocaleString("en-US")} offline`}
          hintHref={OFFLINE_HREF}
          hintLive="offline"
        />
        <StatCard
          href="/devices?approval_status=pending"
          label="Pending approval"
          value={counts.pending}
          live="pending"
          tone={counts.pending > 0 ? "warn" : undefined}
          hint="Waiting for an operator"
        />
        <StatCard
          href="/alerts"
          label="Active alerts"
          value={counts.alerts}
          live="alerts"
          tone={counts.alerts > 0 ? "danger" : undefined}
          hint="Open alerts across the fleet"
        />
      </div>
      {counts.total === 0 ? (
        <EmptyState
          icon="devices"
          title="No devices yet"
          text="Install the Outpost agent on a Linux device and run `outpost-agent register`, or pre-register a device by its MAC address. New devices wait for approval on the Devices page."
        >
          {props.canManage ? (
            <a class="btn primary" href="/devices/new">
              Add device
            </a>
          ) : (
            ""
          )}
        </EmptyState>
      ) : (
        <div class="grid dash">
          <section class="card">
            <div class="card-head">
              <h2>Fleet activity</h2>
              <span class="muted small">devices that checked in, per hour, last 24 h (UTC)</span>
            </div>
            <Chart
              id="fleet-activity"
              title="Devices seen per hour"
              t={props.activity.t}
              series={[{ label: "Devices seen", values: props.activity.devices }]}
              kind="bars"
              height={260}
            />
          </section>
          <section class="card">
            <div class="card-head">
              <h2>Recent registrations</h2>
              <a href="/devices" class="small">
                All devices →
              </a>
            </div>
            <ul class="recent-list">
              {props.recent.map((device) => (
                <li>
                  <a href={`/devices/${device.id}`} class="recent-name">
                    <strong safe>{device.name}</strong>
                    <span class="muted small">
                      <span class="mono" safe>
                        {device.macAddress}
                      </span>
                      {" · registered "}
                      <Time value={device.createdAt} />
                    </span>
                  </a>
                  <span class="recent-meta">
                    <ApprovalBadge status={device.approvalStatus} />
                    <OnlineBadge online={device.online} lastSeenAt={device.lastSeenAt} />
                  </span>
                </li>
              ))}
            </ul>
          </section>
        </div>
      )}
      <p class="muted small" safe>
        {`A device counts as online when it checked in within the last ${props.onlineWindowMinutes} min. Online and offline count approved devices.`}
      </p>
    </Layout>
  );
}
