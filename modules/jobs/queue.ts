import type { Sql } from "../platform/database";

export interface EnqueueOptions {
  /** Replaces a not-yet-started job with the same key instead of adding another. */
  jobKey?: string;
  maxAttempts?: number;
  runAt?: Date;
}

/**
 * Adds a job through SQL so it commits or rolls back with the caller's transaction, and so web
 * processes can enqueue without a worker pool of their own.
 */
export async function enqueueJob(
  sql: Sql,
  task: string,
  payload: unknown = {},
  options: EnqueueOptions = {},
): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    select (graphile_worker.add_job(
      ${task},
      ${JSON.stringify(payload)}::json,
      job_key => ${options.jobKey ?? null},
      max_attempts => ${options.maxAttempts ?? null},
      run_at => ${options.runAt?.toISOString() ?? null}::timestamptz
    )).id::text as id`;
  return row!.id;
}
