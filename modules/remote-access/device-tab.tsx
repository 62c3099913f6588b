// The remote access tab of the device page (listed in modules/console/device-detail/tabs.ts) and the
// panel it loads: the part of this feature other pages may show.
import { Badge, CsrfField, PostButton, Time } from "../../ui/components";
import { Hidden } from "../../ui/form";
import type { Lease, RemoteAccessClosure } from "./service";

export interface RemoteAccessPanelProps {
  deviceId: string;
  online: boolean;
  /** Viewers see the state but never open a lease. */
  canOperate: boolean;
  /** The lease this page holds (console leases are per operator and device). */
  myLease: Lease | undefined;
  leases: Lease[];
  /** Set while an operator's Close remote access holds: the page opens no lease until Reopen. */
  closure: RemoteAccessClosure | undefined;
  tunnel: { connectedAt: Date; forwards: string[] } | undefined;
  agentError: string | undefined;
  csrfToken: string;
}

/** Where the panel is mounted in the device page; panel.js fills it and keeps the lease alive. */
export function RemoteAccessSlot({ deviceId, csrfToken }: { deviceId: string; csrfToken: string }) {
  return (
    <div id="remote-access" data-device-id={deviceId} data-csrf={csrfToken}>
      <section class="card">
        <h2>Remote access</h2>
        <p class="muted">Loading…</p>
      </section>
      <script src="/remote-access/panel.js" defer></script>
    </div>
  );
}

/**
 * On the device page's other tabs: holds this operator's lease while the page is open (spec: opening the
 * device view requests remote access), so the device is fast-polling with its tunnel up before anyone asks.
 */
export function RemoteAccessKeeper({ deviceId, csrfToken }: { deviceId: string; csrfToken: string }) {
  return (
    <div id="remote-access" data-device-id={deviceId} data-csrf={csrfToken} data-keeper="1" hidden>
      <script src="/remote-access/panel.js" defer></script>
    </div>
  );
}

function TunnelState({ props }: { props: RemoteAccessPanelProps }) {
  if (props.tunnel) {
    return (
      <span>
        <Badge tone="ok" label="Connected" /> since <Time value={props.tunnel.connectedAt} />
      </span>
    );
  }
  if (props.leases.length > 0) return <Badge tone="warn" label="Waiting for the device" />;
  if (props.closure) return <Badge label="Closed" />;
  return <Badge label="Not requested" />;
}

export function RemoteAccessPanel({ props }: { props: RemoteAccessPanelProps }) {
  return (
    <section class="card" data-lease-id={props.myLease?.id ?? ""} data-remote-panel>
      <h2>Remote access</h2>
      {!props.online ? (
        <p class="muted">The device is offline. Remote access opens when it is online again.</p>
      ) : !props.canOperate ? (
        <p class="muted">Your role can see remote access but not open it.</p>
      ) : (
        ""
      )}
      {props.closure ? (
        <div class="flash info remote-closed" data-remote-closed>
          <p>
            <strong>Remote access closed</strong> by <span safe>{props.closure.by}</span>{" "}
            <Time value={props.closure.at} />. Your pages do not open it again until you reopen it; another
            operator opening this device's page does.
          </p>
          {props.canOperate && props.online ? (
            <PostButton
              action={`/devices/${props.deviceId}/remote-access/reopen`}
              csrfToken={props.csrfToken}
              label="Reopen remote access"
              tone="primary"
            />
          ) : (
            ""
          )}
        </div>
      ) : (
        ""
      )}
      <dl class="facts">
        <dt>Tunnel</dt>
        <dd>
          <TunnelState props={props} />
        </dd>
        <dt>Agent error</dt>
        <dd safe>{props.agentError ?? "—"}</dd>
        <dt>Held by</dt>
        <dd>
          {props.leases.length === 0 ? (
            "nobody"
          ) : (
            <ul class="plain">
              {props.leases.map((lease) => (
                <li>
                  <span safe>{lease.holder}</span> <span class="muted small">({lease.ownerKind}, until </span>
                  <Time value={lease.expiresAt} />
                  <span class="muted small">)</span>
                </li>
              ))}
            </ul>
          )}
        </dd>
      </dl>
      {props.canOperate && props.leases.length > 0 ? (
        <div class="toolbar-row">
          {props.myLease ? (
            // A new tab, so this page (whose live connection holds the lease) stays open. The device UI
            // cannot reach this page: the open route answers with a cross-site redirect.
            // biome-ignore lint/security/noBlankTarget: forms have no rel attribute
            <form method="post" action={`/devices/${props.deviceId}/remote-access/open`} target="_blank">
              <CsrfField token={props.csrfToken} />
              <Hidden name="lease_id" value={props.myLease.id} />
              <button class="btn small primary" type="submit" data-open-web-ui>
                Open web UI
              </button>
            </form>
          ) : (
            ""
          )}
          <PostButton
            action={`/devices/${props.deviceId}/remote-access/close`}
            csrfToken={props.csrfToken}
            label="Close remote access"
            tone="danger"
            confirm="Close remote access to this device? Its tunnel stops for everyone (web UI, terminal sessions) and stays closed until you reopen it or another operator opens this device."
          />
        </div>
      ) : (
        ""
      )}
    </section>
  );
}

/** Settings: the tunnel server's host key fingerprint, which agents pin (compare it on a device). */
