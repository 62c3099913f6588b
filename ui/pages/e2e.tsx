import type { ResultRow, RunRow } from "../../modules/e2e/model";
import { RUN_STATUSES } from "../../modules/e2e/schema";
import type { JourneyLogLine, RunsPageQuery, RunsPageRow } from "../../modules/e2e/service";
import { Badge, CsrfField, EmptyState, PageHead, Time } from "../components";
import { Layout, type PageContext } from "../layout";

export interface E2EPageData {
  filters: RunsPageQuery;
  rows: RunsPageRow[];
  total: number;
  suites: string[];
  environments: string[];
  canDelete: boolean;
  detail?:
    | {
        run: RunRow;
        results: (ResultRow & { description: string })[];
        log?: { journeyId: string; lines: JourneyLogLine[]; truncated?: boolean; error?: string };
      }
    | { missing: string };
}

type Tone = "ok" | "warn" | "danger" | "info" | undefined;

function statusTone(status: string): Tone {
  switch (status) {
    case "passed":
      return "ok";
    case "failed":
      return "danger";
    case "blocked":
    case "skipped":
      return "warn";
    case "running":
      return "info";
    default:
      return undefined;
  }
}

export function StatusBadge({ status }: { status: string }) {
  return <Badge tone={statusTone(status)} label={status} />;
}

/** /e2e with the current filters and `changes` applied ("" or undefined drops a parameter). */
function pageUrl(
  filters: RunsPageQuery,
  changes: Record<string, string | number | undefined> = {},
  extra = "",
): string {
  const params = new URLSearchParams();
  const base: Record<string, string | number | undefined> = {
    status: filters.status,
    suite: filters.suite,
    environment: filters.environment,
    trigger: filters.trigger,
    q: filters.q,
    sort: filters.sort === "started_at" ? undefined : filters.sort,
    dir: filters.dir === "desc" ? undefined : filters.dir,
    page: filters.page > 1 ? filters.page : undefined,
  };
  for (const [key, value] of Object.entries({ ...base, ...changes })) {
    if (value !== undefined && value !== "") params.set(key, String(value));
  }
  const query = params.toString();
  return `/e2e${query ? `?${query}` : ""}${extra && query ? `&${extra}` : extra ? `?${extra}` : ""}`;
}

function durationText(start: Date | null, end: Date | null, ms?: number | null): string {
  const value = ms ?? (start && end ? end.getTime() - start.getTime() : null);
  if (value === null || value === undefined) return "—";
  if (value < 1000) return `${value} ms`;
  if (value < 120_000) return `${(value / 1000).toFixed(1)} s`;
  return `${Math.round(value / 60_000)} min`;
}

function Select(props: { name: string; label: string; value: string | undefined; options: string[] }) {
  return (
    <label>
      <span safe>{props.label}</span>
      <select name={props.name}>
        <option value="">All</option>
        {props.options.map((option) => (
          <option value={option} selected={option === props.value} safe>
            {option}
          </option>
        ))}
      </select>
    </label>
  );
}

function SortHeader({
  filters,
  column,
  label,
}: {
  filters: RunsPageQuery;
  column: RunsPageQuery["sort"];
  label: string;
}) {
  const active = filters.sort === column;
  const nextDir = active && filters.dir === "desc" ? "asc" : "desc";
  return (
    <th aria-sort={active ? (filters.dir === "asc" ? "ascending" : "descending") : undefined}>
      <a class="sort-link" href={pageUrl(filters, { sort: column, dir: nextDir, page: undefined })}>
        <span safe>{label}</span>
        {active ? <span aria-hidden="true">{filters.dir === "asc" ? " ▲" : " ▼"}</span> : ""}
      </a>
    </th>
  );
}

/** The runs table; re-fetched every 5 s (paused while runs are selected for deletion). */
export function E2ERunsTable({ data, csrfToken }: { data: E2EPageData; csrfToken: string }) {
  const { filters, rows, total } = data;
  const first = total === 0 ? 0 : (filters.page - 1) * filters.perPage + 1;
  const last = Math.min(filters.page * filters.perPage, total);
  const pages = Math.max(1, Math.ceil(total / filters.perPage));
  const selectedRun = data.detail && "run" in data.detail ? data.detail.run.id : undefined;
  return (
    <div
      id="e2e-runs"
      hx-get={pageUrl(filters, {}, "fragment=runs")}
      hx-trigger="every 5s [!document.querySelector('#e2e-runs input[name=ids]:checked')]"
      hx-swap="outerHTML"
    >
      {rows.length === 0 ? (
        <EmptyState
          icon="e2e"
          title={
            total === 0 && !filters.q && !filters.status && !filters.suite
              ? "No E2E runs yet"
              : "No run matches"
          }
          text="Runs created by CI systems and `./outpost e2e run` through the E2E API appear here with each journey's result and log."
        />
      ) : (
        <form
          method="post"
          action={pageUrl(filters)}
          data-confirm="Delete the selected runs and their journey logs? This cannot be undone."
        >
          <CsrfField token={csrfToken} />
          <input type="hidden" name="action" value="delete" />
          <div class="table-wrap">
            <table class="e2e-runs">
              <thead>
                <tr>
                  {data.canDelete ? (
                    <th>
                      <input
                        type="checkbox"
                        aria-label="Select all runs on this page"
                        onclick="this.closest('form').querySelectorAll('input[name=ids]').forEach((c) => { c.checked = this.checked; })"
                      />
                    </th>
                  ) : (
                    ""
                  )}
                  <th>Run</th>
                  <SortHeader filters={filters} column="suite_id" label="Suite" />
                  <SortHeader filters={filters} column="environment_label" label="Environment" />
                  <SortHeader filters={filters} column="trigger_source" label="Trigger" />
                  <SortHeader filters={filters} column="status" label="Status" />
                  <th class="num">Journeys</th>
                  <SortHeader filters={filters} column="started_at" label="Started" />
                  <SortHeader filters={filters} column="finished_at" label="Finished" />
                  <th class="num">Duration</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((run) => (
                  <tr class={run.id === selectedRun ? "selected" : undefined}>
                    {data.canDelete ? (
                      <td>
                        <input
                          type="checkbox"
                          name="ids"
                          value={run.id}
                          aria-label={`Select run ${run.id}`}
                        />
                      </td>
                    ) : (
                      ""
                    )}
                    <td>
                      <a class="mono" href={pageUrl(filters, { run: run.id })} title={run.id} safe>
                        {run.id.slice(0, 8)}
                      </a>
                      <div class="muted small" safe>
                        {run.runner_id}
                      </div>
                    </td>
                    <td safe>{run.suite_id}</td>
                    <td safe>{run.environment_label}</td>
                    <td>{run.trigger_source}</td>
                    <td>
                      <StatusBadge status={run.status} />
                    </td>
                    <td class="num">
                      <span safe>{`${run.journeys_passed}/${run.journeys_total}`}</span>
                      {run.journeys_failed > 0 ? (
                        <span class="muted small" safe>{` · ${run.journeys_failed} failed`}</span>
                      ) : (
                        ""
                      )}
                    </td>
                    <td>
                      <Time value={run.started_at} />
                    </td>
                    <td>
                      {run.finished_at ? <Time value={run.finished_at} /> : <span class="muted">—</span>}
                    </td>
                    <td class="num">
                      {run.finished_at ? durationText(run.started_at, run.finished_at) : "—"}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div class="pager">
            <span class="muted" safe>{`Showing ${first}–${last} of ${total}`}</span>
            <span class="actions">
              {data.canDelete ? (
                <button class="btn danger small" type="submit">
                  Delete selected
                </button>
              ) : (
                ""
              )}
              {filters.page > 1 ? (
                <a class="btn small" href={pageUrl(filters, { page: filters.page - 1 })} rel="prev">
                  ← Newer
                </a>
              ) : (
                ""
              )}
              <span class="muted small" safe>{`Page ${filters.page} of ${pages}`}</span>
              {filters.page < pages ? (
                <a class="btn small" href={pageUrl(filters, { page: filters.page + 1 })} rel="next">
                  Older →
                </a>
              ) : (
                ""
              )}
            </span>
          </div>
        </form>
      )}
    </div>
  );
}

function LogViewer({ log }: { log: NonNullable<Extract<E2EPageData["detail"], { run: RunRow }>["log"]> }) {
  if (log.error) {
    return (
      <p class="muted" role="status" safe>
        {log.error}
      </p>
    );
  }
  const steps = log.lines.filter((line) => line.kind === "step");
  const width = Math.max(2, String(steps.length).length);
  let stepNumber = 0;
  return (
    <div class="log-viewer">
      <ol class="log-steps">
        {log.lines.map((line) => {
          if (line.kind === "invalid") {
            return (
              <li class="log-line invalid">
                <Badge tone="warn" label="unreadable" /> <span safe>{line.problem ?? ""}</span>
                <pre safe>{line.raw.slice(0, 500)}</pre>
              </li>
            );
          }
          const e = line.entry!;
          const str = (key: string) => (e[key] === undefined || e[key] === null ? "" : String(e[key]));
          if (line.kind === "journey") {
            return (
              <li class="log-line journey">
                <strong safe>{`JOURNEY ${str("event").toUpperCase()}`}</strong>{" "}
                <StatusBadge status={str("status") || "running"} />{" "}
                <span class="muted small" safe>
                  {[
                    str("timestamp"),
                    e.duration_ms !== undefined ? `${str("duration_ms")} ms` : "",
                    e.steps_run !== undefined
                      ? `${str("steps_passed")}/${str("steps_run")} steps passed`
                      : "",
                    str("failure_step") ? `failed at ${str("failure_step")} (${str("failure_code")})` : "",
                  ]
                    .filter(Boolean)
                    .join(" · ")}
                </span>
              </li>
            );
          }
          stepNumber += 1;
          const label = `STEP ${String(stepNumber).padStart(width, "0")}`;
          return (
            <li class={`log-line step ${str("status")}`}>
              <div>
                <strong safe>{label}</strong>{" "}
                <span class="mono" safe>
                  {str("step_id") || str("action")}
                </span>{" "}
                <StatusBadge status={str("status")} />
                <span class="muted small" safe>
                  {[
                    `${str("action")} → ${str("expect")}`,
                    e.http_status !== undefined ? `HTTP ${str("http_status")}` : "",
                    e.duration_ms !== undefined ? `${str("duration_ms")} ms` : "",
                  ]
                    .filter(Boolean)
                    .join(" · ")}
                </span>
              </div>
              {str("error_message") ? (
                <div class="log-error" safe>
                  {`${str("error_code")}: ${str("error_message")}`}
                </div>
              ) : (
                ""
              )}
              <details>
                <summary class="muted small">Raw entry</summary>
                <pre safe>{JSON.stringify(e, null, 2).slice(0, 4000)}</pre>
              </details>
            </li>
          );
        })}
      </ol>
      {log.truncated ? <p class="muted small">Only the first 200 000 characters are shown.</p> : ""}
    </div>
  );
}

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
  const { run, results, log } = detail;
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

export function E2EPage({ ctx, data }: { ctx: PageContext; data: E2EPageData }) {
  const { filters } = data;
  return (
    <Layout ctx={ctx} title="E2E runs">
      <PageHead
        title="E2E runs"
        subtitle="Test runs created through the E2E API. The list refreshes every 5 seconds."
      />
      <form class="card inline-form filters" method="get" action="/e2e">
        <Select name="status" label="Status" value={filters.status} options={[...RUN_STATUSES]} />
        <Select name="suite" label="Suite" value={filters.suite} options={data.suites} />
        <Select
          name="environment"
          label="Environment"
          value={filters.environment}
          options={data.environments}
        />
        <Select name="trigger" label="Trigger" value={filters.trigger} options={["manual", "ci"]} />
        <label>
          Search
          <input
            type="search"
            name="q"
            value={filters.q ?? ""}
            placeholder="run id, suite, runner, journey…"
          />
        </label>
        <button class="btn primary" type="submit">
          Apply
        </button>
        {filters.status || filters.suite || filters.environment || filters.trigger || filters.q ? (
          <a class="btn" href="/e2e">
            Clear
          </a>
        ) : (
          ""
        )}
      </form>
      <div class="stack">
        {data.detail ? <E2EDetail data={data} /> : ""}
        <E2ERunsTable data={data} csrfToken={ctx.csrfToken} />
      </div>
    </Layout>
  );
}

export function E2EDisabledPage({ ctx }: { ctx: PageContext }) {
  return (
    <Layout ctx={ctx} title="E2E runs">
      <PageHead title="E2E runs" />
      <EmptyState
        icon="e2e"
        title="E2E runs are turned off"
        text="This server does not accept E2E runs. Set E2E_ENABLED=true and E2E_CONFIG to the E2E configuration file, then restart Outpost."
      />
    </Layout>
  );
}
