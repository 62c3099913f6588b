import type { TransactionSql } from "postgres";
import type { Sql } from "../platform/database";

export interface EnqueueOptions {
  /** At most one pending job per key: a second add with the same key updates the pending one. */
  jobKey?: string;
  /**
   * With a jobKey: `replace` (graphile-worker's default) overwrites the pending job's payload and run_at;
   * `preserve_run_at` keeps its run_at, so a stream of adds cannot postpone it forever.
   */
  jobKeyMode?: "replace" | "preserve_run_at";
  /** When to run; now when absent. */
  runAt?: Date;
  /**
   * Or: run this many ms after the database's now (a delay that no process clock can skew: tests move
   * the app's clock forward).
   */
  delayMs?: number;
  /** graphile-worker's own default (25) when absent. */
  maxAttempts?: number;
  /** Jobs of one named queue run one at a time, in order. */
  queue?: string;
}

/**
 * Adds a graphile-worker job through SQL: given a transaction (`sql.begin(tx => …)`), the job exists only
 * if that transaction commits; web processes enqueue without a worker pool of their own. The one way
 * the app adds jobs. Returns the job's id.
 */
export async function enqueueJob(
  sql: Sql | TransactionSql,
  task: string,
  payload: unknown = {},
  options: EnqueueOptions = {},
): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    select (graphile_worker.add_job(
      ${task},
      ${JSON.stringify(payload)}::json,
      queue_name => ${options.queue ?? null},
      run_at => coalesce(${options.runAt ?? null}::timestamptz,
        now() + ${options.delayMs ?? null}::float8 * interval '1 millisecond'),
      max_attempts => ${options.maxAttempts ?? null}::int,
      job_key => ${options.jobKey ?? null},
      job_key_mode => ${options.jobKeyMode ?? "replace"}
    )).id::text as id`;
  return row!.id;
}
