import type { Database } from "../platform/database";
import { AppError } from "../platform/errors";
import { enqueueJob } from "./queue";

export { type EnqueueOptions, enqueueJob } from "./queue";

import type { jobRuns } from "./schema";
import type { JobCatalog, JobSchedule } from "./task";

export interface QueuedJob {
  id: string;
  taskIdentifier: string;
  runAt: Date;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  lockedAt: Date | null;
  lockedBy: string | null;
  createdAt: Date;
}

export interface JobOverview {
  queued: number;
  running: number;
  failed: number;
  succeeded24h: number;
  failed24h: number;
}

export interface KnownTask {
  identifier: string;
  description: string;
  schedule: JobSchedule | undefined;
}

export function knownTasks(catalog: JobCatalog): KnownTask[] {
  return catalog.jobs.map((job) => ({
    identifier: job.identifier,
    description: job.description,
    schedule: catalog.schedules.find((s) => s.task === job.identifier),
  }));
}

export async function jobOverview(database: Database): Promise<JobOverview> {
  const [queue] = await database.sql<{ queued: number; running: number; failed: number }[]>`
    select
      count(*) filter (where locked_at is null and attempts < max_attempts)::int as queued,
      count(*) filter (where locked_at is not null)::int as running,
      count(*) filter (where attempts >= max_attempts)::int as failed
    from graphile_worker.jobs`;
  const [runs] = await database.sql<{ succeeded: number; failed: number }[]>`
    select count(*) filter (where status = 'succeeded')::int as succeeded,
      count(*) filter (where status = 'failed')::int as failed
    from job_runs where started_at > now() - interval '24 hours'`;
  return {
    queued: queue?.queued ?? 0,
    running: queue?.running ?? 0,
    failed: queue?.failed ?? 0,
    succeeded24h: runs?.succeeded ?? 0,
    failed24h: runs?.failed ?? 0,
  };
}

/** Jobs graphile-worker still holds: waiting, running, or failed for good. */
export async function listQueuedJobs(database: Database, limit = 50): Promise<QueuedJob[]> {
  const rows = await database.sql<QueuedJob[]>`
    select id::text as id, task_identifier as "taskIdentifier", run_at as "runAt", attempts,
           max_attempts as "maxAttempts", last_error as "lastError", locked_at as "lockedAt",
           locked_by as "lockedBy", created_at as "createdAt"
    from graphile_worker.jobs
    order by locked_at desc nulls last, run_at asc
    limit ${limit}`;
  return rows.map((row) => ({
    ...row,
    runAt: row.runAt,
    lockedAt: row.lockedAt,
    createdAt: row.createdAt,
  }));
}

export type JobRun = typeof jobRuns.$inferSelect;

export async function listRecentRuns(database: Database, limit = 50): Promise<JobRun[]> {
  return database.sql<JobRun[]>`
    select id, job_id as "jobId", task_identifier as "taskIdentifier", attempt, status, started_at as "startedAt",
      finished_at as "finishedAt", duration_ms as "durationMs", error, worker_id as "workerId"
    from job_runs order by started_at desc limit ${limit}`;
}

/** Queues a known task to run as soon as a worker is free. */
export async function runJobNow(database: Database, catalog: JobCatalog, task: string): Promise<string> {
  if (!catalog.jobs.some((job) => job.identifier === task)) {
    throw new AppError(404, "unknown_task", `There is no job called "${task}"`);
  }
  return enqueueJob(database.sql, task, { trigger: "manual" });
}

/** Job history kept on the Jobs page. */
export const JOB_HISTORY_DAYS = 30;

/** Deletes job runs older than `JOB_HISTORY_DAYS`; returns how many went. */
export async function pruneJobHistory(database: Database): Promise<number> {
  const runs = await database.sql`
    delete from job_runs where started_at < now() - make_interval(days => ${JOB_HISTORY_DAYS})`;
  return runs.count;
}

/** Jobs waiting (not locked, attempts left) per task: the queue depth a scrape reports. */
export async function queueDepthByTask(database: Database): Promise<{ task: string; waiting: number }[]> {
  return database.sql<{ task: string; waiting: number }[]>`
    select task_identifier as task, count(*)::int as waiting from graphile_worker.jobs
    where locked_at is null and attempts < max_attempts group by task_identifier`;
}

export { migrateJobQueue } from "./runner";
export { defineJob, type JobCatalog, type JobDefinition, type JobSchedule } from "./task";
