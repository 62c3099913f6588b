// The runs page's list as CSV: every run matching its filters and search, in its order.
import { csvResponse, keysetBatches } from "../platform/csv";
import type { Database } from "../platform/database";
import { type PageQuery, pageFilters, type RunsCursor, runsAfter } from "./queries";

const COLUMNS = [
  "id",
  "suite_id",
  "environment_label",
  "trigger_source",
  "status",
  "started_at",
  "finished_at",
  "journeys",
  "runner_id",
  "journeys_passed",
  "journeys_failed",
  "duration_ms",
];

/** `GET /e2e.csv`: the runs of `/e2e` with the same query, on all its pages, streamed 500 at a time. */
export function runsCsv(database: Database, query: PageQuery): Response {
  const filters = pageFilters(query);
  const batches = keysetBatches(
    async (cursor: RunsCursor | undefined) => {
      const { rows, next } = await runsAfter(database, filters, cursor, 500);
      return { items: rows, next };
    },
    (run) => [
      run.id,
      run.suite_id,
      run.environment_label,
      run.trigger_source,
      run.status,
      run.started_at,
      run.finished_at,
      run.journey_ids.join(" "),
      run.runner_id,
      run.journeys_passed,
      run.journeys_failed,
      run.finished_at ? run.finished_at.getTime() - run.started_at.getTime() : null,
    ],
  );
  return csvResponse(`e2e-runs-${new Date().toISOString().slice(0, 10)}.csv`, COLUMNS, batches);
}
