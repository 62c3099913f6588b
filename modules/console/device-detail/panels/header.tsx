// Header, offline banner and gauges of the device page; also the part refreshed live.
import { PostButton, Time } from "../../../../ui/components";
import type { PageContext } from "../../../../ui/layout";
import { ApprovalBadge, Gauge, OnlineBadge } from "../../../../ui/widgets";
import { installLine } from "../../../enrolment/service";
import type { DeviceDetailProps } from "../props";

/**
 * A device pre-authorised by MAC waits for its agent to register once with the claim token shown when it
 * was added (docs/device-api.md): say so, how, and let an operator reissue a lost token.
 */
function AwaitingClaim({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const { device } = props;
  return (
    <div class="offline-banner waiting" role="status" data-awaiting-claim>
      <strong>Waiting for the device to register with its claim token.</strong>{" "}
      <span>
        This device was added by its MAC address, which anyone can know, so its agent must present the claim
        token shown when it was added. On the device, as root:{" "}
        <code safe>{installLine(props.baseUrl, "<claim token>")}</code>, or put{" "}
        <code>{"enrolment_token: &lt;claim token&gt;"}</code> in an installed agent's{" "}
        <code>/etc/outpost/agent.yaml</code>.{" "}
        {device.approvalStatus === "approved"
          ? "Its first registration with the token gets its API token at once."
          : "It then waits for approval."}{" "}
        A registration of this MAC without the token gets nothing.
        {device.lastRegistrationAt ? (
          <>
            {" "}
            Last attempt: <Time value={device.lastRegistrationAt} />.
          </>
        ) : (
          ""
        )}
      </span>
      {props.canManage ? (
        <span class="actions">
          <PostButton
            action={`/devices/${device.id}/claim-token`}
            csrfToken={ctx.csrfToken}
            label="Reissue claim token"
            confirm="Issue a new claim token? The current one stops working at once."
          />
        </span>
      ) : (
        ""
      )}
    </div>
  );
}

/**
 * The pending identity claim (a registration of this MAC that could not prove it is this device) and the
 * registrations refused while it waits. The decision form carries the claim's fingerprint, so the server
 * refuses it if the pending claim is not the one shown here any more.
 */
function IdentityClaim({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const { device } = props;
  const refused = device.conflictRefused;
  if (!device.identityConflictAt && refused.count === 0) return "";
  return (
    <div class="offline-banner conflict" role="alert" data-identity-conflict>
      {device.identityConflictAt ? (
        <>
          <strong>Identity conflict.</strong>{" "}
          <span>
            An agent registered with this MAC address <Time value={device.identityConflictAt} />
            {device.conflictAddress ? <span safe>{` from ${device.conflictAddress}`}</span> : ""}
            {device.conflictLastAt && device.conflictLastAt > device.identityConflictAt ? (
              <>
                {" "}
                (last asked <Time value={device.conflictLastAt} />)
              </>
            ) : (
              ""
            )}{" "}
            with secret fingerprint{" "}
            <code data-claim-fingerprint safe>
              {device.conflictFingerprint ?? ""}
            </code>{" "}
            but could not prove it is this device, so it got no token. If this device was re-imaged or
            replaced, and <code>outpost-agent status</code> on it shows this fingerprint, accept the new
            identity: the old one's token stops working. Otherwise reject it.
          </span>
        </>
      ) : (
        <strong>Refused registrations.</strong>
      )}
      {refused.count > 0 ? (
        <span data-refused-claims>
          {" "}
          <span safe>
            {`${refused.count} ${refused.count === 1 ? "registration" : "registrations"} of this MAC with ${device.identityConflictAt ? "another secret (or none)" : "no secret"} ${refused.count === 1 ? "was" : "were"} refused`}
          </span>
          {refused.at ? (
            <>
              {" "}
              (latest <Time value={refused.at} />
              {refused.address ? <span safe>{` from ${refused.address}`}</span> : ""})
            </>
          ) : (
            ""
          )}
          {device.identityConflictAt
            ? ": only the claim above can be accepted; reject it to let the next one be shown."
            : "."}
        </span>
      ) : (
        ""
      )}
      {props.canManage ? (
        <span class="actions">
          {device.identityConflictAt ? (
            <PostButton
              action={`/devices/${device.id}/identity`}
              csrfToken={ctx.csrfToken}
              label="Accept new identity"
              tone="primary"
              confirm={`Accept the identity with fingerprint ${device.conflictFingerprint}? The device that holds the current token is locked out.`}
              fields={{ decision: "accept", fingerprint: device.conflictFingerprint ?? "" }}
            />
          ) : (
            ""
          )}
          <PostButton
            action={`/devices/${device.id}/identity`}
            csrfToken={ctx.csrfToken}
            label={device.identityConflictAt ? "Reject" : "Dismiss"}
            fields={{ decision: "reject", fingerprint: device.conflictFingerprint ?? "" }}
          />
        </span>
      ) : (
        ""
      )}
    </div>
  );
}

export function DeviceHeader({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const { device } = props;
  // A pending device that never sent a heartbeat is waiting for approval, not offline.
  const waiting = device.approvalStatus === "pending" && !device.lastSeenAt;
  return (
    <div
      id="device-live"
      class="stack"
      hx-get={`/devices/${device.id}/live`}
      hx-trigger="every 30s, live:device-self from:body"
      hx-swap="outerHTML"
    >
      <section class="card device-header">
        <div class="device-title">
          <div>
            <h1 safe>{props.name}</h1>
            <p class="mono muted" safe>
              {device.macAddress}
            </p>
          </div>
          <div class="badges">
            <ApprovalBadge status={device.approvalStatus} />
            <OnlineBadge
              online={device.online}
              lastSeenAt={device.lastSeenAt}
              pending={device.approvalStatus === "pending"}
            />
          </div>
        </div>
        <dl class="facts inline-facts">
          <div>
            <dt>IPv4</dt>
            <dd class="mono" safe>
              {device.ipv4Address ?? "—"}
            </dd>
          </div>
          <div>
            <dt>Product</dt>
            <dd safe>{device.productName ?? "—"}</dd>
          </div>
          {waiting ? (
            <div>
              <dt>Last attempt</dt>
              <dd>
                <Time value={device.lastRegistrationAt} />
              </dd>
            </div>
          ) : (
            <div>
              <dt>Last seen</dt>
              <dd>
                <Time value={device.lastSeenAt} />
              </dd>
            </div>
          )}
          <div>
            <dt>Registered</dt>
            <dd>
              <Time value={device.createdAt} />
            </dd>
          </div>
        </dl>
        {props.canManage ? (
          <div class="actions device-actions">
            {device.approvalStatus === "pending" ? (
              <>
                <PostButton
                  action={`/devices/${device.id}/approve`}
                  csrfToken={ctx.csrfToken}
                  label="Approve"
                  tone="primary"
                />
                <PostButton
                  action={`/devices/${device.id}/reject`}
                  csrfToken={ctx.csrfToken}
                  label="Reject"
                  tone="danger"
                  confirm="Reject this device? It will not be able to send heartbeats."
                />
              </>
            ) : device.approvalStatus === "approved" ? (
              <PostButton
                action={`/devices/${device.id}/revoke`}
                csrfToken={ctx.csrfToken}
                label="Revoke"
                tone="danger"
                confirm={`Revoke ${props.name}? Its token stops working at once, remote access closes, and it stays rejected until you delete it.`}
              />
            ) : (
              ""
            )}
            <PostButton
              action={`/devices/${device.id}/delete`}
              csrfToken={ctx.csrfToken}
              label="Delete"
              tone="danger"
              confirm={`Delete ${props.name}? Its telemetry and command history are deleted too. If the agent registers again it comes back as a new, pending device.`}
            />
          </div>
        ) : (
          ""
        )}
      </section>
      <IdentityClaim ctx={ctx} props={props} />
      {device.awaitingClaim ? (
        <AwaitingClaim ctx={ctx} props={props} />
      ) : waiting ? (
        <div class="offline-banner waiting" role="status">
          <strong>Waiting for approval.</strong>{" "}
          {device.lastRegistrationAt ? (
            <span>
              The agent last asked for its token <Time value={device.lastRegistrationAt} /> and asks again
              every 10 seconds: once approved, it picks the token up and starts sending heartbeats.
            </span>
          ) : (
            <span>
              This device was added by an operator; no agent has registered with its MAC address yet.
            </span>
          )}
        </div>
      ) : !device.online ? (
        <div class="offline-banner" role="status">
          <strong>This device is offline.</strong>{" "}
          {device.lastSeenAt ? (
            <span>
              It was last seen <Time value={device.lastSeenAt} /> (
              <span safe>{device.lastSeenAt.toISOString().replace("T", " ").slice(0, 19)}</span> UTC). Figures
              below are from its last heartbeat; commands queued now are delivered when it checks in again.
            </span>
          ) : (
            <span>
              {device.approvalStatus === "approved"
                ? "It has not sent a heartbeat yet."
                : "It has not checked in: devices send heartbeats only once approved."}
            </span>
          )}
        </div>
      ) : (
        ""
      )}
      <section class="gauges" aria-label="Latest figures">
        <Gauge
          title="CPU"
          value={props.gauges.cpu?.value}
          label={props.gauges.cpu?.label}
          max={props.gauges.cpu?.label.startsWith("Load") ? 4 : 100}
          unit={props.gauges.cpu?.label.startsWith("Load") ? "" : "%"}
        />
        <Gauge
          title="Memory"
          value={props.gauges.memory?.value}
          label={props.gauges.memory?.label}
          unit="%"
        />
        <Gauge title="Disk" value={props.gauges.disk?.value} label={props.gauges.disk?.label} unit="%" />
      </section>
    </div>
  );
}

/** Header, offline banner and gauges: refreshed every 30 s and on live events. */
export function DeviceLive({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  return <DeviceHeader ctx={ctx} props={props} />;
}
