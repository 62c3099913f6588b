// Overview tab: identity, metadata and the announced telemetry schema.
import { Time } from "../../../../ui/components";
import { ApprovalBadge } from "../../../../ui/widgets";
import type { DeviceDetailProps } from "../props";

const ACRONYMS = new Set(["os", "ip", "id", "uuid", "mac", "cpu"]);

/** `agent_version` → "Agent version", `os` → "OS". */
function humanise(key: string): string {
  const words = key.split(/[_\s]+/).filter(Boolean);
  return words
    .map((word, index) =>
      ACRONYMS.has(word.toLowerCase())
        ? word.toUpperCase()
        : index === 0
          ? word[0]!.toUpperCase() + word.slice(1)
          : word,
    )
    .join(" ");
}

/** Metadata as labelled values: nested objects become "OS › release" rows, lists of words are joined. */
export function metadataFacts(value: unknown, label = "", depth = 0): [string, string][] {
  if (value !== null && typeof value === "object" && !Array.isArray(value) && depth < 3) {
    return Object.entries(value).flatMap(([key, inner]) =>
      metadataFacts(inner, label ? `${label} › ${humanise(key)}` : humanise(key), depth + 1),
    );
  }
  if (Array.isArray(value) && value.every((item) => item === null || typeof item !== "object")) {
    return [[label, value.map(String).join(", ")]];
  }
  return [[label, typeof value === "object" && value !== null ? JSON.stringify(value) : String(value)]];
}

export function OverviewPanel({ props }: { props: DeviceDetailProps }) {
  const { device } = props;
  const metadata = metadataFacts(device.metadata ?? {});
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
          <dt>Device secret</dt>
          <dd>
            {device.hasSecret
              ? "bound: only this device can register with its MAC address"
              : "none yet: bound at the agent's next registration"}
          </dd>
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
            {metadata.map(([label, value]) => (
              <>
                <dt safe>{label}</dt>
                <dd class="mono" safe>
                  {value}
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
              {`${typeof device.schema.product === "string" ? `Product ${device.schema.product} · ` : ""}script set ${device.schemaVersion ?? "v1"} (changes whenever the device's scripts do; reports and alert rules follow fields, not this)`}
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
