import type { Database, Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import type { E2EConfig } from "./config";
import {
  type ResultRow,
  type ResultView,
  type RunFilters,
  type RunRow,
  type RunView,
  resultRow,
  resultView,
  runRow,
  runView,
} from "./model";
import { RUN_STATUSES } from "./schema";

export const RUN_COLUMNS = `id::text as id, suite_id, journey_ids, environment_label, trigger_source, protocol_version, runner_id,
  idempotency_key, status, metadata, started_at, finished_at`;
export const RESULT_COLUMNS = `id::text as id, run_id::text as run_id, journey_id, position, status, failure_step, failure_reason,
  log_ref, started_at, finished_at, duration_ms::float8 as duration_ms`;

export const runNotFound = () => new AppError(404, "not_found", "There is no E2E run with this id.");

export function listSuites(e2e: E2EConfig) {
  return [...e2e.suites.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([id, journeyIds]) => ({ id, journey_ids: journeyIds }));
}

export async function listRuns(database: Database, filters: RunFilters = {}): Promise<RunView[]> {
  const limit = Math.min(Math.max(filters.limit ?? 50, 1), 500);
  const rows = await database.sql.unsafe<RunRow[]>(
    `select ${RUN_COLUMNS} from e2e_runs
     where ($1::text is null or status = $1) and ($2::text is null or suite_id = $2)
       and ($3::text is null or environment_label = $3) and ($4::text is null or trigger_source = $4)
     order by started_at desc, id desc limit $5`,
    [
      filters.status ?? null,
      filters.suite_id ?? null,
      filters.environment_label ?? null,
      filters.trigger_source ?? null,
      limit,
    ],
  );
  return rows.map((row) => runView(runRow(row)));
}

export async function findRun(database: Database, runId: string): Promise<RunRow | undefined> {
  if (!isUuid(runId)) return undefined;
  const [row] = await database.sql.unsafe<RunRow[]>(`select ${RUN_COLUMNS} from e2e_runs where id = $1`, [
    runId,
  ]);
  return row && runRow(row);
}

export async function getRun(database: Database, runId: string): Promise<RunView> {
  const run = await findRun(database, runId);
  if (!run) throw runNotFound();
  return runView(run);
}

async function resultRows(sql: Sql, runId: string): Promise<ResultRow[]> {
  const rows = await sql.unsafe<ResultRow[]>(
    `select ${RESULT_COLUMNS} from e2e_run_results where run_id = $1 order by position`,
    [runId],
  );
  return rows.map(resultRow);
}

export async function listResultRows(database: Database, runId: string): Promise<ResultRow[]> {
  return resultRows(database.sql, runId);
}

export async function listResults(database: Database, runId: string): Promise<ResultView[]> {
  if (!(await findRun(database, runId))) throw runNotFound();
  return (await resultRows(database.sql, runId)).map(resultView);
}

/** Runs per status (the E2E gauge of a metrics scrape). */
/** Runs per status, every status listed (0 when no run has it: a metric reads 0, not "no data"). */
export async function countRunsByStatus(database: Database): Promise<{ status: string; runs: number }[]> {
  const rows = await database.sql<{ status: string; runs: number }[]>`
    select status::text as status, count(*)::int as runs from e2e_runs group by status`;
  const counts = new Map(rows.map((row) => [row.status, row.runs]));
  return RUN_STATUSES.map((status) => ({ status, runs: counts.get(status) ?? 0 }));
}
