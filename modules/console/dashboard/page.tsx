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
  /** The saved view the cards count (`?view=`); none: the whole fleet, live. */
  view?: { id: string; name: string } | undefined;
  views: { id: string; name: string }[];
  onlineWindowMinutes: number;
}

/** A device list link, narrowed to the view the cards count. */
function inView(href: string, view: DashboardProps["view"]) {
  if (!view) return href;
  return `${href}${href.includes("?") ? "&" : "?"}view=${encodeURIComponent(view.id)}`;
}

/** Pick the saved view the cards count (a GET form: the view is in the URL). */
function ViewPicker({ view, views }: Pick<DashboardProps, "view" | "views">) {
  if (views.length === 0) return "";
  return (
    <form method="get" action="/" class="inline-form" id="dashboard-view">
      <label for="dashboard-view-select">Count</label>
      <select id="dashboard-view-select" name="view">
        <option value="">the whole fleet</option>
        {views.map((v) => (
          <option value={v.id} selected={v.id === view?.id} safe>
            {v.name}
          </option>
        ))}
      </select>
      <button class="btn small" type="submit">
        Show
      </button>
    </form>
  );
}

// Online and offline count approved devices only (pending ones cannot send heartbeats), so their
// links filter on approval too: the list then holds exactly the number on the card.
export const ONLINE_HREF = "/devices?approval_status=approved&connectivity_status=online";
export const OFFLINE_HREF = "/devices?approval_status=approved&connectivity_status=offline";

export function DashboardPage({ ctx, props }: { ctx: PageContext; props: DashboardProps }) {
  const { counts, view } = props;
  return (
    <Layout ctx={ctx} title="Dashboard">
      <link rel="stylesheet" href={assetUrl("uplot.min.css")} />
      <script src={assetUrl("uplot.min.js")} defer></script>
      <script src={assetUrl("charts.js")} defer></script>
      <script src={assetUrl("console.js")} defer></script>
      {/* The live updates count the whole fleet: a view's cards are not updated live. */}
      {view ? "" : <div data-live-page="dashboard" hidden></div>}
      <PageHead
        title={view ? `Dashboard: ${view.name}` : "Dashboard"}
        subtitle={
          view
            ? "The devices of this saved view, counted when the page loaded."
            : "Your fleet at a glance. Numbers update as devices check in."
        }
      >
        <ViewPicker view={view} views={props.views} />
        {view ? "" : <LiveStatus />}
        {props.canManage ? (
          <a class="btn primary" href="/devices/new">
            Add device
          </a>
        ) : (
          ""
        )}
      </PageHead>
      <div class="grid stats">
        <StatCard href={inView("/devices", view)} label="Total devices" value={counts.total} live={"total"} />
        <StatCard
          href={inView(ONLINE_HREF, view)}
          label="Online"
          value={counts.online}
          live={"online"}
          tone="ok"
          hint={`${counts.offline.toLocaleString("en-US")} offline`}
          hintHref={inView(OFFLINE_HREF, view)}
          hintLive={"offline"}
        />
        <StatCard
          href={inView("/devices?approval_status=pending", view)}
          label="Pending approval"
          value={counts.pending}
          live={"pending"}
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
