// Console building blocks: stat cards, gauges, filter chips, status badges, charts.
import { Badge, Time } from "./components";

/** A device's approval status: "approved", "rejected", anything else (pending) as a warning. */
export function ApprovalBadge({ status }: { status: string }) {
  const tone = status === "approved" ? "ok" : status === "rejected" ? "danger" : "warn";
  return <Badge tone={tone} label={status} />;
}

/** Online/offline; a pending device that never sent a heartbeat is "waiting" (for approval), not offline. */
export function OnlineBadge(props: { online: boolean; lastSeenAt: Date | null; pending?: boolean }) {
  const { online, lastSeenAt } = props;
  if (props.pending && !online)
    return (
      <span class="badge info" title="waiting for approval">
        <span class="dot" aria-hidden="true"></span>
        waiting
      </span>
    );
  return (
    <span class={online ? "badge ok" : "badge"} title={lastSeenAt ? lastSeenAt.toISOString() : "never seen"}>
      <span class="dot" aria-hidden="true"></span>
      {online ? "online" : "offline"}
    </span>
  );
}

/** A dashboard number that links to the list behind it; `live` names the key live updates fill in. */
export function StatCard(props: {
  href: string;
  label: string;
  value: number;
  live: string;
  hint?: string;
  hintLive?: string;
  /** Makes the hint a second link (e.g. the offline count next to the online one). */
  hintHref?: string;
  tone?: "ok" | "warn" | "danger";
}) {
  const tone = props.tone ? ` tone-${props.tone}` : "";
  const body = (
    <>
      <div class="label" safe>
        {props.label}
      </div>
      <div class="value" data-live={props.live} safe>
        {props.value.toLocaleString("en-US")}
      </div>
    </>
  );
  if (props.hintHref !== undefined) {
    // Two links in one card: the main one covers the card, the hint sits above it.
    return (
      <div class={`card stat stat-split${tone}`}>
        <a class="stat-link" href={props.href}>
          {body}
        </a>
        <a class="hint" href={props.hintHref} data-live-hint={props.hintLive} safe>
          {props.hint ?? ""}
        </a>
      </div>
    );
  }
  return (
    <a class={`card stat${tone}`} href={props.href}>
      {body}
      {props.hint !== undefined ? (
        <div class="hint" data-live-hint={props.hintLive} safe>
          {props.hint}
        </div>
      ) : (
        ""
      )}
    </a>
  );
}

/**
 * A ring gauge drawn in SVG on the server (no script needed). `max` scales the ring; values that
 * are not percentages (load) show their number with the ring relative to `max`.
 */
export function Gauge(props: {
  title: string;
  value: number | undefined;
  label?: string;
  max?: number;
  unit?: string;
}) {
  const max = props.max ?? 100;
  const radius = 42;
  const circumference = 2 * Math.PI * radius;
  const fraction = props.value === undefined ? 0 : Math.max(0, Math.min(1, props.value / max));
  const tone = fraction >= 0.9 ? "danger" : fraction >= 0.75 ? "warn" : "ok";
  const shown =
    props.value === undefined
      ? "–"
      : `${props.value >= 100 ? Math.round(props.value) : Math.round(props.value * 10) / 10}${props.unit ?? ""}`;
  return (
    <figure class={`gauge ${props.value === undefined ? "empty" : tone}`}>
      <svg
        viewBox="0 0 100 100"
        role="img"
        aria-label={`${props.title}: ${props.value === undefined ? "no data" : shown}`}
      >
        <circle class="track" cx="50" cy="50" r={String(radius)} />
        <circle
          class="fill"
          cx="50"
          cy="50"
          r={String(radius)}
          stroke-dasharray={`${(fraction * circumference).toFixed(2)} ${circumference.toFixed(2)}`}
          transform="rotate(-90 50 50)"
        />
        <text x="50" y="55" text-anchor="middle" safe>
          {shown}
        </text>
      </svg>
      <figcaption>
        <strong safe>{props.title}</strong>
        <span class="muted small" safe>
          {props.value === undefined ? "no data yet" : (props.label ?? "")}
        </span>
      </figcaption>
    </figure>
  );
}

export interface Chip {
  label: string;
  value: string;
  /** URL without this filter. */
  removeHref: string;
}

export function FilterChips({ chips, clearHref }: { chips: Chip[]; clearHref: string }) {
  if (chips.length === 0) return "";
  return (
    <nav class="chips" aria-label="Active filters">
      <span class="muted small">Filters:</span>
      {chips.map((chip) => (
        <a class="chip" href={chip.removeHref} title={`Remove filter ${chip.label}`} hx-boost="false">
          <span safe>{`${chip.label}: ${chip.value}`}</span>
          <span aria-hidden="true" class="chip-x">
            ×
          </span>
          <span class="visually-hidden">(remove)</span>
        </a>
      ))}
      {chips.length > 1 ? (
        <a class="chip-clear" href={clearHref}>
          Clear all
        </a>
      ) : (
        <a class="chip-clear" href={clearHref}>
          Clear
        </a>
      )}
    </nav>
  );
}

export interface ChartSeries {
  label: string;
  values: (number | null)[];
}

/** A uPlot chart, drawn by /assets/charts.js from the data attribute (JSON, attribute-escaped). */
export function Chart(props: {
  id: string;
  title: string;
  t: number[];
  series: ChartSeries[];
  height?: number;
  kind?: "line" | "bars";
  /** Labels of a categorical x axis (t holds 0..n-1): bars per device. */
  categories?: string[] | undefined;
}) {
  const data = JSON.stringify({
    t: props.t,
    series: props.series,
    kind: props.kind ?? "line",
    categories: props.categories,
  });
  return (
    <figure class="chart-card">
      <figcaption safe>{props.title}</figcaption>
      <div
        class="chart"
        id={props.id}
        data-chart={data}
        style={`min-height:${props.height ?? 220}px`}
        role="img"
        aria-label={`Chart: ${props.title}`}
      ></div>
    </figure>
  );
}

export function LastSeen({ value }: { value: Date | null }) {
  return <Time value={value} />;
}

/** The "Live" indicator that ui/static/console.js keeps in step with the live-update stream. */
export function LiveStatus() {
  return (
    <span class="live-status" data-live-status aria-live="polite">
      <span class="dot" aria-hidden="true"></span>
      <span data-live-status-text>Live</span>
    </span>
  );
}
