// Overview tab: identity, metadata and the announced telemetry schema.
import { Time } from "../../../../ui/components";
import { ApprovalBadge } from "../../../../ui/widgets";
import type { DeviceDetailProps } from "../props";

export function OverviewPanel({ props }: { props: DeviceDetailProps }) {
  const { device } = props;
  const metadata = Object.entries(device.metadata ?? {});
  const properties = (device.schema?.properties ?? {}) as Record<
    string,
    { properties?: Record<string, { type?: unknown }> }
  >;
  return (
    <div class="grid two align-start">
      <section class="card">
        <h2>Identity</h2>
        <dl class="facts">
          <dt>Device id</dt>
          <dd class="mono" safe>
            {device.id}
          </dd>
          <dt>Name</dt>
          <dd safe>{props.name}</dd>
          <dt>MAC address</dt>
          <dd class="mono" safe>
            {device.macAddress}
          </dd>
          <dt>Product</dt>
          <dd safe>{device.productName ?? "—"}</dd>
          <dt>IPv4</dt>
          <dd class="mono" safe>
            {device.ipv4Address ?? "—"}
          </dd>
          <dt>Approval</dt>
          <dd>
            <ApprovalBadge status={device.approvalStatus} />{" "}
            {device.approvalChangedAt ? (
              <span class="muted small">
                changed <Time value={device.approvalChangedAt} />
              </span>
            ) : (
              ""
            )}
          </dd>
          <dt>API token</dt>
          <dd>{device.hasApiToken ? "issued" : "not issued"}</dd>
          <dt>Remote access</dt>
          <dd>{device.remoteAccessRequested ? "requested" : "not requested"}</dd>
          <dt>Registered</dt>
          <dd>
            <Time value={device.createdAt} />
          </dd>
        </dl>
      </section>
      <section class="card">
        <h2>Metadata</h2>
        {metadata.length === 0 ? (
          <p class="muted">The device reported no metadata.</p>
        ) : (
          <dl class="facts">
            {metadata.map(([key, value]) => (
              <>
                <dt safe>{key}</dt>
                <dd class={typeof value === "object" ? "" : "mono"} safe>
                  {typeof value === "object" ? JSON.stringify(value) : String(value)}
                </dd>
              </>
            ))}
          </dl>
        )}
        <h2 class="spaced">Telemetry schema</h2>
        {Object.keys(properties).length === 0 ? (
          <p class="muted">No telemetry schema announced yet.</p>
        ) : (
          <>
            <p class="muted small" safe>
              {`Version ${device.schemaVersion ?? "v1"}${typeof device.schema.product === "string" ? ` · product ${device.schema.product}` : ""}`}
            </p>
            <ul class="schema-list">
              {Object.entries(properties).map(([script, schema]) => (
                <li>
                  <strong safe>{script}</strong>{" "}
                  <span class="muted small" safe>
                    {Object.entries(schema?.properties ?? {})
                      .map(
                        ([field, spec]) =>
                          `${field} (${Array.isArray(spec?.type) ? spec.type.join("|") : String(spec?.type ?? "any")})`,
                      )
                      .join(", ") || "no fields"}
                  </span>
                </li>
              ))}
            </ul>
          </>
        )}
      </section>
    </div>
  );
}
