import { Badge, Time } from "../../../ui/components";
import type { JourneyHealth, JourneyOutcome } from "../health";
import { durationText, StatusBadge } from "./common";

/**
 * Journey health on the runs page: outcome/duration sparklines as inline SVG built here (no script,
 * nothing to load), the pass rate with the flaky badge, and the history panel of one journey.
 */

function outcomeTitle(o: JourneyOutcome): string {
  const commit = o.commit ? ` · ${o.commit.slice(0, 12)}` : "";
  return `${o.status} · ${durationText(null, null, o.duration_ms)} · ${o.started_at.toISOString()}${commit}`;
}

/** One bar per run, oldest left: the colour is the outcome, the height the duration. */
export function Sparkline({ history, large }: { history: JourneyOutcome[]; large?: boolean }) {
  const bar = large ? 14 : 6;
  const gap = large ? 4 : 2;
  const height = large ? 80 : 22;
  const ordered = [...history].reverse();
  const longest = Math.max(1, ...ordered.map((o) => o.duration_ms ?? 0));
  const width = Math.max(1, ordered.length * (bar + gap) - gap);
  const label = `${ordered.length} runs, oldest first: ${ordered.map((o) => o.status).join(", ")}`;
  return (
    <svg
      class={large ? "sparkline large" : "sparkline"}
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={label}
    >
      {ordered.map((o, i) => {
        const h = Math.max(3, Math.round(((o.duration_ms ?? 0) / longest) * height));
        return (
          <rect class={`spark-${o.status}`} x={i * (bar + gap)} y={height - h} width={bar} height={h} rx="1">
            <title safe>{outcomeTitle(o)}</title>
          </rect>
        );
      })}
    </svg>
  );
}

export function PassRate({ health }: { health: JourneyHealth }) {
  const rate = health.pass_rate === null ? "—" : `${Math.round(health.pass_rate * 100)}%`;
  return (
    <span class="pass-rate">
      <span
        title={`${health.passed} passed, ${health.failed} failed in the last ${health.runs} finished runs of this suite and environment`}
        safe
      >{`${rate} (${health.passed}/${health.passed + health.failed})`}</span>
      {health.flaky ? (
        <span class="flaky-badge" title={health.flaky_reason ?? ""}>
          <Badge tone="warn" label="flaky" />
        </span>
      ) : (
        ""
      )}
    </span>
  );
}

/** The flaky journeys among the suites and environments of the runs listed. */
export function FlakyJourneys({
  health,
  href,
}: {
  health: JourneyHealth[];
  href: (h: JourneyHealth) => string;
}) {
  const flaky = health.filter((h) => h.flaky);
  if (health.length === 0) return <div id="e2e-flaky"></div>;
  return (
    <section id="e2e-flaky" class="card">
      <h2>Flaky journeys</h2>
      <p class="muted small">
        Journeys of the suites and environments listed below that both passed and failed on one commit (or
        back and forth within a day), over each pair's last finished runs.
      </p>
      {flaky.length === 0 ? (
        <p class="muted">No flaky journey.</p>
      ) : (
        <div class="table-wrap">
          <table class="e2e-flaky">
            <thead>
              <tr>
                <th>Journey</th>
                <th>Pass rate</th>
                <th>History</th>
                <th>Why</th>
              </tr>
            </thead>
            <tbody>
              {flaky.map((h) => (
                <tr>
                  <td>
                    <a class="mono" href={href(h)} safe>
                      {h.journey_id}
                    </a>
                    <div class="muted small" safe>{`${h.suite_id} · ${h.environment_label}`}</div>
                  </td>
                  <td>
                    <PassRate health={h} />
                  </td>
                  <td>
                    <a href={href(h)} aria-label={`History of ${h.journey_id}`}>
                      <Sparkline history={h.history} />
                    </a>
                  </td>
                  <td class="muted small" safe>
                    {h.flaky_reason ?? ""}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** One journey's last runs of its suite and environment: a larger chart and the list. */
export function JourneyHistory({
  health,
  runHref,
}: {
  health: JourneyHealth;
  runHref: (runId: string) => string;
}) {
  return (
    <div class="journey-history" id="journey-history">
      <h3 safe>{`History of ${health.journey_id} · ${health.suite_id} in ${health.environment_label}`}</h3>
      <p>
        <PassRate health={health} />
        {health.flaky_reason ? <span class="muted small" safe>{` · ${health.flaky_reason}`}</span> : ""}
      </p>
      <Sparkline history={health.history} large />
      <div class="table-wrap">
        <table class="e2e-history">
          <thead>
            <tr>
              <th>Run</th>
              <th>Started</th>
              <th>Status</th>
              <th class="num">Duration</th>
              <th>Commit</th>
            </tr>
          </thead>
          <tbody>
            {health.history.map((o) => (
              <tr>
                <td>
                  <a class="mono" href={runHref(o.run_id)} title={o.run_id} safe>
                    {o.run_id.slice(0, 8)}
                  </a>
                </td>
                <td>
                  <Time value={o.started_at} />
                </td>
                <td>
                  <StatusBadge status={o.status} />
                </td>
                <td class="num" safe>
                  {durationText(null, null, o.duration_ms)}
                </td>
                <td class="mono" safe>
                  {o.commit?.slice(0, 12) ?? "—"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
