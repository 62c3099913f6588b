import type { TransactionSql } from "postgres";
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
  resultView,
  runView,
} from "./model";
import { RUN_STATUSES } from "./schema";

/** Fixed column lists (no input), inlined into tagged templates with `sql.unsafe`. */
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
  const sql = database.sql;
  const { status = null, suite_id = null, environment_label = null, trigger_source = null } = filters;
  const rows = await sql<RunRow[]>`
    select ${sql.unsafe(RUN_COLUMNS)} from e2e_runs
    where (${status}::text is null or status = ${status}) and (${suite_id}::text is null or suite_id = ${suite_id})
      and (${environment_label}::text is null or environment_label = ${environment_label})
      and (${trigger_source}::text is null or trigger_source = ${trigger_source})
    order by started_at desc, id desc limit ${limit}`;
  return rows.map(runView);
}

export async function findRun(database: Database, runId: string): Promise<RunRow | undefined> {
  if (!isUuid(runId)) return undefined;
  const sql = database.sql;
  const [row] = await sql<RunRow[]>`select ${sql.unsafe(RUN_COLUMNS)} from e2e_runs where id = ${runId}`;
  return row;
}

export async function getRun(database: Database, runId: string): Promise<RunView> {
  const run = await findRun(database, runId);
  if (!run) throw runNotFound();
  return runView(run);
}

export function resultRows(sql: Sql | TransactionSql, runId: string): Promise<ResultRow[]> {
  return sql<ResultRow[]>`
    select ${sql.unsafe(RESULT_COLUMNS)} from e2e_run_results where run_id = ${runId} order by position`;
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
