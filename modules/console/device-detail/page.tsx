import { assetUrl } from "../../../ui/assets";
import { OneTimeSecret } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { LiveStatus } from "../../../ui/widgets";
import { installLine } from "../../enrolment/service";
import { RemoteAccessKeeper } from "../../remote-access/service";
import { tabUrl } from "./links";
import { DeviceHeader } from "./panels/header";
import type { DeviceDetailProps } from "./props";
import { DEVICE_TABS, deviceTab } from "./tabs";

export function DevicePanel({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const tab = deviceTab(props.tab);
  return (
    <div id="tab-panel" role="tabpanel" aria-label={tab.label}>
      <tab.Panel ctx={ctx} props={props} />
    </div>
  );
}

export function DeviceDetailPage({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const { device } = props;
  return (
    <Layout ctx={ctx} title={props.name}>
      {props.tab === "telemetry" ? (
        <>
          <link rel="stylesheet" href={assetUrl("uplot.min.css")} />
          <script src={assetUrl("uplot.min.js")} defer></script>
          <script src={assetUrl("charts.js")} defer></script>
        </>
      ) : (
        ""
      )}
      <script src={assetUrl("console.js")} defer></script>
      <div data-live-page="device" data-device-id={device.id} hidden></div>
      <div class="toolbar-row">
        <nav class="breadcrumb" aria-label="Breadcrumb">
          <a href="/devices">Devices</a> <span aria-hidden="true">/</span> <span safe>{props.name}</span>
        </nav>
        <LiveStatus />
      </div>
      {props.newClaimToken ? (
        <section class="card" id="claim-reissued">
          <OneTimeSecret
            id="claim-token"
            headline="New claim token issued; the previous one no longer works."
            advice="Shown once: the device must present it to take this entry."
            secret={props.newClaimToken}
          />
          <p>Install the agent with it on the device, as root:</p>
          <div class="secret" id="claim-install-line" safe>
            {installLine(props.baseUrl, props.newClaimToken)}
          </div>
        </section>
      ) : (
        ""
      )}
      <DeviceHeader ctx={ctx} props={props} />
      {/* The alerts feature's panel (modules/alerts), loaded and refreshed by htmx. */}
      <div
        id="device-alerts"
        hx-get={`/alerts/device/${props.device.id}`}
        hx-trigger="load"
        hx-swap="outerHTML"
      ></div>
      <nav class="tabs" aria-label="Device sections">
        {DEVICE_TABS.map((tab) => (
          <a href={tabUrl(device.id, tab.id)} aria-current={tab.id === props.tab ? "page" : undefined} safe>
            {tab.label}
          </a>
        ))}
      </nav>
      <DevicePanel ctx={ctx} props={props} />
      {props.tab !== "remote" && props.canManage && device.online && device.approvalStatus === "approved" ? (
        <RemoteAccessKeeper deviceId={device.id} csrfToken={ctx.csrfToken} />
      ) : (
        ""
      )}
    </Layout>
  );
}
