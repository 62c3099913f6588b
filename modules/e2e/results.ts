import type { Database } from "../platform/database";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import type { Logger } from "../platform/logger";
import {
  invalidRequest as invalid,
  type ResultRow,
  type ResultSubmit,
  type ResultView,
  type RunRow,
  type RunView,
  resultView,
  runView,
} from "./model";
import { LOCK_CHANNEL } from "./notify";
import { RESULT_COLUMNS, RUN_COLUMNS, runNotFound } from "./runs";
import { aggregateRunStatus, isFinalResult, isFinalRun } from "./statuses";

const MAX_TEXT = 2000;

/** A result read inside the run's JSON (one round trip with the lock): JSON carries timestamps as text. */
type ResultJson = Omit<ResultRow, "started_at" | "finished_at"> & {
  started_at: string | null;
  finished_at: string | null;
};
const resultFromJson = (r: ResultJson): ResultRow => ({
  ...r,
  started_at: r.started_at === null ? null : new Date(r.started_at),
  finished_at: r.finished_at === null ? null : new Date(r.finished_at),
});

const clip = (value: string | null | undefined) =>
  typeof value === "string" ? value.slice(0, MAX_TEXT) : value;

/**
 * POST /e2e/runs/{id}/results (its body checked by parseResultsBody): updates the journeys and the run in one transaction, holding the
 * run row (FOR UPDATE) so concurrent submissions for one run apply one after another. Four round
 * trips: lock+read, update results, update run (only when it changes), commit.
 */
export async function submitResults(
  database: Database,
  logger: Logger,
  runId: string,
  results: ResultSubmit[],
): Promise<ResultView[]> {
  if (!isUuid(runId)) throw runNotFound();
  try {
    return await database.sql.begin(async (tx) => {
      const [run] = await tx<(RunRow & { results: ResultJson[] })[]>`
        select ${tx.unsafe(RUN_COLUMNS)},
          (select coalesce(json_agg(json_build_object('id', x.id, 'run_id', x.run_id, 'journey_id', x.journey_id,
             'position', x.position, 'status', x.status, 'failure_step', x.failure_step, 'failure_reason', x.failure_reason,
             'log_ref', x.log_ref, 'started_at', x.started_at, 'finished_at', x.finished_at, 'duration_ms', x.duration_ms)
             order by x.position), '[]'::json) from e2e_run_results x where x.run_id = e2e_runs.id) as results
        from e2e_runs where id = ${runId} for update`;
      if (!run) throw runNotFound();
      if (run.status === "cancelled")
        throw invalid(`Run ${runId} was cancelled; it accepts no more results.`, { field: "results" });
      const unknown = results.filter((r) => !run.journey_ids.includes(r.journey_id)).map((r) => r.journey_id);
      if (unknown.length > 0) {
        throw invalid(`Unknown journeys provided: ${unknown.join(", ")}.`, {
          field: "results",
          journey_ids: unknown,
        });
      }
      const current = new Map(run.results.map((r) => [r.journey_id, resultFromJson(r)]));
      for (const result of results) {
        const existing = current.get(result.journey_id)!;
        if (isFinalResult(existing.status) && !isFinalResult(result.status)) {
          throw invalid(
            `Journey '${result.journey_id}' already finished as ${existing.status}; it can only change to another final status.`,
            { field: "results", journey_id: result.journey_id },
          );
        }
      }
      // Absent optional fields keep their stored value; a null clears it.
      const keep = <K extends "failure_step" | "failure_reason" | "log_ref">(r: ResultSubmit, key: K) =>
        key in r ? (clip(r[key]) ?? null) : current.get(r.journey_id)![key];
      // The input's columns are named apart from the table's, so RESULT_COLUMNS needs no qualifier.
      const updated = await tx<ResultRow[]>`
        update e2e_run_results r set
          status = i.new_status,
          failure_step = i.new_failure_step,
          failure_reason = i.new_failure_reason,
          log_ref = i.new_log_ref,
          started_at = case when r.started_at is null and i.new_status <> 'queued' then now() else r.started_at end,
          finished_at = case when i.final then now() else null end,
          duration_ms = coalesce(i.new_duration_ms,
            case when i.final then (extract(epoch from now() - coalesce(r.started_at, now())) * 1000)::bigint end),
          updated_at = now()
        from (select u.*, u.duration_text::bigint as new_duration_ms,
                u.new_status in ('passed', 'failed', 'cancelled', 'blocked', 'skipped') as final
              from unnest(${results.map((r) => r.journey_id)}::text[], ${results.map((r) => r.status)}::text[],
                ${results.map((r) => keep(r, "failure_step"))}::text[], ${results.map((r) => keep(r, "failure_reason"))}::text[],
                ${results.map((r) => keep(r, "log_ref"))}::text[],
                ${results.map((r) => (r.duration_ms === undefined || r.duration_ms === null ? null : String(r.duration_ms)))}::text[])
                as u(journey, new_status, new_failure_step, new_failure_reason, new_log_ref, duration_text)) i
        where r.run_id = ${runId} and r.journey_id = i.journey
        returning ${tx.unsafe(RESULT_COLUMNS)}`;
      // The map keeps the run's order by position (a set() of a present key keeps its place).
      for (const row of updated) current.set(row.journey_id, row);
      const rows = [...current.values()];
      const aggregate = aggregateRunStatus(rows.map((r) => r.status));
      // A final run never reopens (its lock is gone and may already belong to the next run): it
      // follows its journeys only to another final status, e.g. passed → failed.
      const status = isFinalRun(run.status) && !isFinalRun(aggregate) ? run.status : aggregate;
      const final = isFinalRun(status);
      if (status !== run.status || final !== (run.finished_at !== null)) {
        await tx`
          update e2e_runs set status = ${status},
            finished_at = case when ${final} then coalesce(finished_at, now()) else null end, updated_at = now()
          where id = ${runId}`;
        if (final && !isFinalRun(run.status)) {
          await tx`
            with released as (delete from e2e_environment_locks where run_id = ${runId} returning 1)
            select pg_notify(${LOCK_CHANNEL}, ${run.environment_label})`;
        }
      }
      return rows.map(resultView);
    });
  } catch (error) {
    if (error instanceof AppError) throw error;
    logger.error({ err: error, runId }, "E2E results could not be stored");
    throw new AppError(422, "database_error", "Failed to update results.");
  }
}

// ---------------------------------------------------------------- cancel

/** Cancels a run that is not final (its open journeys too) and releases its lock; a final run is returned as is. */
export async function cancelRun(database: Database, logger: Logger, runId: string): Promise<RunView> {
  if (!isUuid(runId)) throw runNotFound();
  try {
    return await database.sql.begin(async (tx) => {
      const [run] = await tx<
        RunRow[]
      >`select ${tx.unsafe(RUN_COLUMNS)} from e2e_runs where id = ${runId} for update`;
      if (!run) throw runNotFound();
      if (isFinalRun(run.status)) return runView(run);
      await tx`
        update e2e_run_results set status = 'cancelled', finished_at = now(), updated_at = now(),
          duration_ms = coalesce(duration_ms, case when started_at is null then null
            else (extract(epoch from now() - started_at) * 1000)::bigint end)
        where run_id = ${runId} and status in ('queued', 'running')`;
      const [updated] = await tx<RunRow[]>`
        update e2e_runs set status = 'cancelled', finished_at = now(), updated_at = now() where id = ${runId}
        returning ${tx.unsafe(RUN_COLUMNS)}`;
      await tx`delete from e2e_environment_locks where run_id = ${runId}`;
      await tx`select pg_notify(${LOCK_CHANNEL}, ${run.environment_label})`;
      logger.info({ runId }, "E2E run cancelled");
      return runView(updated!);
    });
  } catch (error) {
    if (error instanceof AppError) throw error;
    logger.error({ err: error, runId }, "E2E run could not be cancelled");
    throw new AppError(422, "database_error", "Failed to cancel run.");
  }
}
