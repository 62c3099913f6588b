import { Time } from "../../../ui/components";
import { HEALTH_RUNS } from "../health";
import { durationText, type E2EPageData, pageUrl, StatusBadge } from "./common";
import { JourneyHistory, PassRate, Sparkline } from "./health";
import { LogViewer } from "./log-viewer";

/** A run's journeys and the selected journey's log; refreshes while the run is active. */
export function E2EDetail({ data }: { data: E2EPageData }) {
  const detail = data.detail;
  if (!detail) return <div id="e2e-detail"></div>;
  if ("missing" in detail) {
    return (
      <section id="e2e-detail" class="card">
        <p
          class="muted"
          safe
        >{`Run ${detail.missing} was not found (it may have been deleted or pruned).`}</p>
      </section>
    );
  }
  const { run, results, log, history } = detail;
  const active = run.status === "queued" || run.status === "running";
  const detailUrl = pageUrl(data.filters, { run: run.id, journey: log?.journeyId });
  return (
    <section
      id="e2e-detail"
      class="card"
      hx-get={active ? `${detailUrl}&fragment=detail` : undefined}
      hx-trigger={active ? "every 5s" : undefined}
      hx-swap={active ? "outerHTML" : undefined}
    >
      <div class="card-head">
        <h2 safe>{`Run ${run.id}`}</h2>
        <StatusBadge status={run.status} />
      </div>
      <dl class="facts">
        <dt>Suite</dt>
        <dd safe>{run.suite_id}</dd>
        <dt>Environment</dt>
        <dd safe>{run.environment_label}</dd>
        <dt>Trigger</dt>
        <dd>{run.trigger_source}</dd>
        <dt>Runner</dt>
        <dd class="mono" safe>
          {run.runner_id}
        </dd>
        <dt>Protocol</dt>
        <dd safe>{run.protocol_version}</dd>
        <dt>Started</dt>
        <dd>
          <Time value={run.started_at} />
        </dd>
        <dt>Finished</dt>
        <dd>{run.finished_at ? <Time value={run.finished_at} /> : <span class="muted">not yet</span>}</dd>
      </dl>
      <h3>Journeys</h3>
      <div class="table-wrap">
        <table class="e2e-journeys">
          <thead>
            <tr>
              <th>Journey</th>
              <th>Description</th>
              <th>Status</th>
              <th>Failure step</th>
              <th>Failure reason</th>
              <th class="num">Duration</th>
              <th title={`Over the last ${HEALTH_RUNS} finished runs of this suite in this environment`}>
                Pass rate
              </th>
              <th>History</th>
              <th>Log</th>
            </tr>
          </thead>
          <tbody>
            {results.map((result) => (
              <tr class={log?.journeyId === result.journey_id ? "selected" : undefined}>
                <td class="mono" safe>
                  {result.journey_id}
                </td>
                <td class="muted" safe>
                  {result.description}
                </td>
                <td>
                  <StatusBadge status={result.status} />
                </td>
                <td class="mono" safe>
                  {result.failure_step ?? ""}
                </td>
                <td safe>{result.failure_reason ?? ""}</td>
                <td class="num" safe>
                  {durationText(result.started_at, result.finished_at, result.duration_ms)}
                </td>
                <td>{result.health ? <PassRate health={result.health} /> : <span class="muted">—</span>}</td>
                <td>
                  {result.health ? (
                    <a
                      class="history-link"
                      href={`${pageUrl(data.filters, { run: run.id, history: result.journey_id })}#journey-history`}
                      aria-label={`History of ${result.journey_id}`}
                    >
                      <Sparkline history={result.health.history} />
                    </a>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td>
                  {result.log_ref ? (
                    <a href={pageUrl(data.filters, { run: run.id, journey: result.journey_id })}>View log</a>
                  ) : (
                    <span class="muted">none</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {history ? (
        <JourneyHistory health={history} runHref={(id) => pageUrl(data.filters, { run: id })} />
      ) : (
        ""
      )}
      {log ? (
        <div class="log-panel">
          <h3 safe>{`Log of ${log.journeyId}`}</h3>
          <LogViewer log={log} />
        </div>
      ) : (
        ""
      )}
    </section>
  );
}
