// Telemetry tab: one chart per numeric field over a range, the field picker, the latest payload.
import { EmptyState, Time } from "../../../../ui/components";
import { CheckboxField, Hidden } from "../../../../ui/form";
import { Chart } from "../../../../ui/widgets";
import { Json } from "../json";
import { tabUrl } from "../links";
import { type DeviceDetailProps, TELEMETRY_RANGES } from "../props";

export function TelemetryPanel({ props }: { props: DeviceDetailProps }) {
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
          <Hidden name="tab" value="telemetry" />
          <Hidden name="range" value={telemetry.range} />
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
                  <CheckboxField name="field" value={label} checked={shown.has(label)}>
                    <span class="mono" safe>
                      {label}
                    </span>
                  </CheckboxField>
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
