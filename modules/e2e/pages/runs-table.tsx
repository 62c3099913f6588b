import { CsrfField, EmptyState, Time } from "../../../ui/components";
import { Checkbox, Hidden } from "../../../ui/form";
import type { RunsPageQuery } from "../queries";
import { durationText, type E2EPageData, pageUrl, StatusBadge } from "./common";

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
      hx-trigger="every 5s"
      data-pause-while="#e2e-runs input[name=ids]:checked"
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
          <Hidden name="action" value="delete" />
          <div class="table-wrap">
            <table class="e2e-runs">
              <thead>
                <tr>
                  {data.canDelete ? (
                    <th>
                      <Checkbox ariaLabel="Select all runs on this page" data={{ "check-all": "ids" }} />
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
                        <Checkbox name="ids" value={run.id} ariaLabel={`Select run ${run.id}`} />
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
