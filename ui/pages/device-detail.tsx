import type { Command } from "../../modules/commands/service";
import type { Device } from "../../modules/devices/service";
import type { ChartData, Gauges } from "../../modules/telemetry/series";
import type { TelemetryEvent } from "../../modules/telemetry/service";
import { assetUrl } from "../assets";
import { Badge, CsrfField, EmptyState, FieldError, PostButton, Time } from "../components";
import { Layout, type PageContext } from "../layout";
import { ApprovalBadge, Chart, Gauge, OnlineBadge } from "../widgets";

/**
 * The tabs of the device page. Remote access and the terminal add their entries here (and a panel
 * in DevicePanel) when they arrive; nothing else needs to change.
 */
export const DEVICE_TABS = [
  { id: "overview", label: "Overview" },
  { id: "telemetry", label: "Telemetry" },
  { id: "scripts", label: "Scripts" },
  { id: "commands", label: "Commands" },
] as const;
export type DeviceTab = (typeof DEVICE_TABS)[number]["id"];

export const TELEMETRY_RANGES = [
  { id: "1h", label: "1 hour", seconds: 3600 },
  { id: "6h", label: "6 hours", seconds: 6 * 3600 },
  { id: "24h", label: "24 hours", seconds: 24 * 3600 },
  { id: "7d", label: "7 days", seconds: 7 * 86400 },
  { id: "30d", label: "30 days", seconds: 30 * 86400 },
] as const;
export type TelemetryRange = (typeof TELEMETRY_RANGES)[number]["id"];

export interface ChartGroup {
  script: string;
  labels: string[];
  data: ChartData;
}

export interface ReportedScript {
  name: string;
  status: string;
  validation: string | undefined;
  durationMs: number | undefined;
  error: string | undefined;
}

export interface ListedScript {
  name: string;
  version: string;
  path: string;
  active: boolean;
}

export interface DeviceDetailProps {
  device: Device;
  name: string;
  tab: DeviceTab;
  canManage: boolean;
  onlineWindowSeconds: number;
  latest: TelemetryEvent | undefined;
  gauges: Gauges;
  telemetry?: {
    range: TelemetryRange;
    groups: ChartGroup[];
    events: number;
    /** Labels of every numeric field of the latest payload (chart order). */
    available: string[];
    /** Labels of the fields charted. */
    shown: string[];
    /** Whether the operator picked the fields (else the first maxFields are shown). */
    picked: boolean;
    maxFields: number;
  };
  scripts?: {
    reported: ReportedScript[];
    listing: { command: Command; scripts: ListedScript[] } | undefined;
    pendingList: Command | undefined;
    values?: { text?: string };
    errors?: Partial<Record<"text" | "form", string>>;
  };
  commands?: { commands: Command[]; next: string | undefined; cursor: string | undefined };
}

function tabUrl(id: string, tab: string, extra = ""): string {
  return tab === "overview"
    ? `/devices/${id}${extra ? `?${extra}` : ""}`
    : `/devices/${id}?tab=${tab}${extra ? `&${extra}` : ""}`;
}

function DeviceHeader({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const { device } = props;
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
            <OnlineBadge online={device.online} lastSeenAt={device.lastSeenAt} />
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
          <div>
            <dt>Last seen</dt>
            <dd>
              <Time value={device.lastSeenAt} />
            </dd>
          </div>
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
      {!device.online ? (
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

function Json({ value }: { value: unknown }) {
  return (
    <pre class="json" safe>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

function Overview({ props }: { props: DeviceDetailProps }) {
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

function TelemetryPanel({ props }: { props: DeviceDetailProps }) {
  const telemetry = props.telemetry!;
  const { device } = props;
  // Range links keep a picked set of fields.
  const picked = telemetry.picked
    ? telemetry.shown.map((label) => `&field=${encodeURIComponent(label)}`).join("")
    : "";
  const shown = new Set(telemetry.shown);
  return (
    <div class="stack">
      <div class="toolbar-row">
        <nav class="segmented" aria-label="Time range">
          {TELEMETRY_RANGES.map((range) => (
            <a
              href={tabUrl(device.id, "telemetry", `range=${range.id}${picked}`)}
              aria-current={range.id === telemetry.range ? "true" : undefined}
            >
              {range.label}
            </a>
          ))}
        </nav>
        <span class="muted small" safe>
          {`${telemetry.events.toLocaleString("en-US")} heartbeats in range`}
        </span>
      </div>
      {telemetry.available.length > 0 ? (
        <form method="get" action={`/devices/${device.id}`} class="field-picker" id="chart-fields">
          <input type="hidden" name="tab" value="telemetry" />
          <input type="hidden" name="range" value={telemetry.range} />
          <details open={telemetry.picked}>
            <summary class="picker-summary" safe>
              {`Charted fields: ${telemetry.shown.length} of ${telemetry.available.length}${telemetry.picked ? "" : " (the first ones)"}`}
            </summary>
            <fieldset>
              <legend class="muted small" safe>
                {`Pick up to ${telemetry.maxFields} fields to chart.`}
              </legend>
              <div class="field-picker-options">
                {telemetry.available.map((label) => (
                  <label class="checkbox">
                    <input type="checkbox" name="field" value={label} checked={shown.has(label)} />
                    <span class="mono" safe>
                      {label}
                    </span>
                  </label>
                ))}
              </div>
              <div class="actions">
                <button type="submit" class="btn small">
                  Show charts
                </button>
                {telemetry.picked ? (
                  <a class="btn small" href={tabUrl(device.id, "telemetry", `range=${telemetry.range}`)}>
                    Reset
                  </a>
                ) : (
                  ""
                )}
              </div>
            </fieldset>
          </details>
        </form>
      ) : (
        ""
      )}
      {telemetry.groups.length === 0 || telemetry.events === 0 ? (
        <EmptyState
          icon="reports"
          title="No telemetry in this range"
          text={
            props.latest
              ? "The device sent no numeric telemetry in this period. Pick a longer range."
              : "Charts appear once the device sends heartbeats with script output."
          }
        />
      ) : (
        <div class="grid charts">
          {telemetry.groups.map((group, index) => (
            <section class="card">
              <Chart
                id={`chart-${index}`}
                height={170}
                title={group.script}
                t={group.data.t}
                series={group.labels.map((label, i) => ({ label, values: group.data.series[i] ?? [] }))}
              />
            </section>
          ))}
        </div>
      )}
      <section class="card">
        <div class="card-head">
          <h2>Latest payload</h2>
          {props.latest ? (
            <span class="muted small">
              received <Time value={props.latest.recordedAt} />
            </span>
          ) : (
            ""
          )}
        </div>
        {props.latest ? (
          <details open>
            <summary>Raw JSON as stored</summary>
            <Json value={props.latest.payload} />
          </details>
        ) : (
          <p class="muted">No heartbeat stored yet.</p>
        )}
      </section>
    </div>
  );
}

function CommandStatus({ command }: { command: Command }) {
  const tone =
    command.status === "succeeded"
      ? "ok"
      : command.status === "failed"
        ? "danger"
        : command.status === "expired"
          ? "warn"
          : "info";
  return <Badge tone={tone} label={command.status} />;
}

function ScriptsPanel({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const scripts = props.scripts!;
  const { device } = props;
  const errors = scripts.errors ?? {};
  return (
    <div class="stack">
      <section class="card">
        <div class="card-head">
          <h2>Installed scripts</h2>
          {props.canManage ? (
            <PostButton
              action={`/devices/${device.id}/commands`}
              csrfToken={ctx.csrfToken}
              label="Ask the device for its list"
              fields={{ type: "list_scripts" }}
            />
          ) : (
            ""
          )}
        </div>
        {scripts.pendingList ? (
          <p class="flash info" role="status">
            A <code>list_scripts</code> request is{" "}
            {scripts.pendingList.status === "queued" ? "queued" : "delivered"} (
            <Time value={scripts.pendingList.queuedAt} />
            ). The list below updates when the device answers.
          </p>
        ) : (
          ""
        )}
        {scripts.listing ? (
          <>
            <p class="muted small">
              As listed by the device <Time value={scripts.listing.command.completedAt} />.
            </p>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th>Script</th>
                    <th>Version</th>
                    <th>State</th>
                    <th class="hide-sm">Path</th>
                    {props.canManage ? (
                      <th>
                        <span class="visually-hidden">Actions</span>
                      </th>
                    ) : (
                      ""
                    )}
                  </tr>
                </thead>
                <tbody data-scripts-list>
                  {scripts.listing.scripts.map((script) => (
                    <tr>
                      <td safe>{script.name}</td>
                      <td class="mono" safe>
                        {script.version}
                      </td>
                      <td>
                        {script.active ? <Badge tone="ok" label="active" /> : <Badge label="older version" />}
                      </td>
                      <td class="mono small hide-sm" safe>
                        {script.path}
                      </td>
                      {props.canManage ? (
                        <td>
                          {script.active ? (
                            <RemoveScript ctx={ctx} deviceId={device.id} name={script.name} />
                          ) : (
                            ""
                          )}
                        </td>
                      ) : (
                        ""
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        ) : (
          <p class="muted">
            The device has not listed its scripts yet
            {props.canManage ? ": ask it with the button above." : "."}
          </p>
        )}
      </section>
      <section class="card">
        <h2>Reported in the last heartbeat</h2>
        {scripts.reported.length === 0 ? (
          <p class="muted">No script results in the last heartbeat.</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Script</th>
                  <th>Run</th>
                  <th>Output</th>
                  <th class="num">Duration</th>
                  <th>Error</th>
                  {props.canManage && !scripts.listing ? (
                    <th>
                      <span class="visually-hidden">Actions</span>
                    </th>
                  ) : (
                    ""
                  )}
                </tr>
              </thead>
              <tbody>
                {scripts.reported.map((script) => (
                  <tr>
                    <td safe>{script.name}</td>
                    <td>
                      <Badge tone={script.status === "success" ? "ok" : "danger"} label={script.status} />
                    </td>
                    <td>
                      {script.validation ? (
                        <Badge
                          tone={script.validation === "invalid" ? "warn" : undefined}
                          label={script.validation}
                        />
                      ) : (
                        ""
                      )}
                    </td>
                    <td class="num" safe>
                      {script.durationMs === undefined ? "—" : `${script.durationMs} ms`}
                    </td>
                    <td class="small" safe>
                      {script.error ?? ""}
                    </td>
                    {props.canManage && !scripts.listing ? (
                      <td>
                        <RemoveScript ctx={ctx} deviceId={device.id} name={script.name} />
                      </td>
                    ) : (
                      ""
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {props.canManage ? (
        // hx-preserve: a live refresh of the tab keeps the form as it is (typed text, a chosen file).
        <section class="card" id="install-script" hx-preserve="true">
          <h2>Install a script</h2>
          <p class="muted small">
            The device installs the script on its next heartbeat and runs it on every poll. Scripts run
            sandboxed on the device. The script starts with its front matter (
            <code>{"/*--- name: … version: … ---*/"}</code>); a newer version of an installed script replaces
            it.
          </p>
          <FieldError message={errors.form} />
          <form
            method="post"
            action={`/devices/${device.id}/scripts`}
            enctype="multipart/form-data"
            class="stacked wide"
          >
            <CsrfField token={ctx.csrfToken} />
            <label>
              Script file
              <input type="file" name="file" accept=".js,.mjs,text/javascript,text/plain" />
            </label>
            <label>
              …or paste the script
              <textarea
                name="text"
                rows="8"
                spellcheck="false"
                aria-invalid={errors.text ? "true" : undefined}
                safe
              >
                {scripts.values?.text ?? ""}
              </textarea>
              <FieldError message={errors.text} />
            </label>
            <div class="actions">
              <button class="btn primary" type="submit">
                Queue install
              </button>
            </div>
          </form>
        </section>
      ) : (
        ""
      )}
    </div>
  );
}

function RemoveScript({ ctx, deviceId, name }: { ctx: PageContext; deviceId: string; name: string }) {
  return (
    <PostButton
      action={`/devices/${deviceId}/commands`}
      csrfToken={ctx.csrfToken}
      label="Remove"
      tone="danger"
      confirm={`Remove the script "${name}" from the device?`}
      fields={{ type: "remove_script", name }}
    />
  );
}

function CommandsPanel({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  const { commands, next, cursor } = props.commands!;
  const { device } = props;
  return (
    <section class="card">
      <div class="card-head">
        <h2>Command history</h2>
        <span class="muted small">newest first</span>
      </div>
      {commands.length === 0 ? (
        <p class="muted">No commands were sent to this device yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Command</th>
                <th>Status</th>
                <th>Queued</th>
                <th class="hide-sm">Delivered</th>
                <th>Finished</th>
                <th>Result</th>
                {props.canManage ? (
                  <th>
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : (
                  ""
                )}
              </tr>
            </thead>
            <tbody>
              {commands.map((command) => (
                <tr data-command-id={command.id}>
                  <td>
                    <code>{command.type}</code>
                    {command.args.length > 0 ? (
                      <span class="muted small" safe>
                        {` ${command.args.join(" ")}`}
                      </span>
                    ) : (
                      ""
                    )}
                    {command.queuedBy ? (
                      <div class="muted small" safe>
                        {`by ${command.queuedBy}`}
                      </div>
                    ) : (
                      ""
                    )}
                  </td>
                  <td>
                    <CommandStatus command={command} />
                  </td>
                  <td>
                    <Time value={command.queuedAt} />
                  </td>
                  <td class="hide-sm">
                    <Time value={command.deliveredAt} />
                  </td>
                  <td>
                    {command.completedAt ? (
                      <Time value={command.completedAt} />
                    ) : (
                      <span class="muted">—</span>
                    )}
                  </td>
                  <td class="result-cell">
                    {command.error ? (
                      <span class="field-error" safe>
                        {command.error}
                      </span>
                    ) : (
                      ""
                    )}
                    {command.output !== null && command.output !== undefined ? (
                      <details>
                        <summary>Output</summary>
                        <Json value={command.output} />
                      </details>
                    ) : command.error ? (
                      ""
                    ) : (
                      <span class="muted">—</span>
                    )}
                  </td>
                  {props.canManage ? (
                    <td>
                      {command.status === "queued" ? (
                        <PostButton
                          action={`/devices/${device.id}/commands/${command.id}/cancel`}
                          csrfToken={ctx.csrfToken}
                          label="Cancel"
                          confirm="Cancel this queued command?"
                        />
                      ) : (
                        ""
                      )}
                    </td>
                  ) : (
                    ""
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav class="pager" aria-label="Command pages">
        <span />
        <span class="actions">
          {cursor ? (
            <a class="btn small" href={tabUrl(device.id, "commands")}>
              Newest
            </a>
          ) : (
            ""
          )}
          {next ? (
            <a class="btn small" href={tabUrl(device.id, "commands", `cursor=${encodeURIComponent(next)}`)}>
              Older →
            </a>
          ) : (
            ""
          )}
        </span>
      </nav>
    </section>
  );
}

export function DevicePanel({ ctx, props }: { ctx: PageContext; props: DeviceDetailProps }) {
  return (
    <div id="tab-panel" role="tabpanel" aria-label={DEVICE_TABS.find((t) => t.id === props.tab)?.label}>
      {props.tab === "overview" ? (
        <Overview props={props} />
      ) : props.tab === "telemetry" ? (
        <TelemetryPanel props={props} />
      ) : props.tab === "scripts" ? (
        <ScriptsPanel ctx={ctx} props={props} />
      ) : (
        <CommandsPanel ctx={ctx} props={props} />
      )}
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
        <span class="live-status" data-live-status aria-live="polite">
          <span class="dot" aria-hidden="true"></span>
          <span data-live-status-text>Live</span>
        </span>
      </div>
      <DeviceHeader ctx={ctx} props={props} />
      {/* The alerts feature's panel (modules/alerts), loaded and refreshed by htmx. */}
      <div
        id="device-alerts"
        hx-get={`/alerts/device/${device.id}`}
        hx-trigger="load"
        hx-swap="outerHTML"
      ></div>
      <nav class="tabs" aria-label="Device sections">
        {DEVICE_TABS.map((tab) => (
          <a href={tabUrl(device.id, tab.id)} aria-current={tab.id === props.tab ? "page" : undefined}>
            {tab.label}
          </a>
        ))}
      </nav>
      <DevicePanel ctx={ctx} props={props} />
    </Layout>
  );
}
