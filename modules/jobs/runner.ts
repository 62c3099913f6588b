import { hostname } from "node:os";
import { type Runner, run, runMigrations, type TaskList, Logger as WorkerLogger } from "graphile-worker";
import pg from "pg";
import type { Logger } from "../platform/logger";
import { jobDuration, zeroJobDurations } from "../platform/metrics";
import type { JobCatalog, JobContext } from "./task";

export const WORKER_SCHEMA = "graphile_worker";

/**
 * Creates graphile-worker's schema so web processes can enqueue before any worker has started. On a
 * pool of ours, ended before this returns: given a connection string, graphile-worker ends its own pool
 * without waiting, after taking its error listener off, so a client still closing when the database
 * went away (a process stopped right after its start) raised an unhandled error.
 */
export async function migrateJobQueue(connectionString: string, logger: Logger): Promise<void> {
  const pgPool = watchedPool({ connectionString, max: 1 }, logger);
  try {
    await runMigrations({ pgPool, schema: WORKER_SCHEMA, logger: workerLogger(logger) });
  } finally {
    await pgPool.end();
  }
}

/** A pool whose connection errors (idle or checked out) are logged, never thrown. */
function watchedPool(options: pg.PoolConfig, logger: Logger): pg.Pool {
  const pgPool = new pg.Pool(options);
  const onPoolError = (error: Error) => logger.error({ err: error }, "job queue connection error");
  pgPool.on("error", onPoolError);
  pgPool.on("connect", (client) => client.on("error", onPoolError));
  return pgPool;
}

/** Routes graphile-worker's messages through pino so there is one log format. */
function workerLogger(logger: Logger): WorkerLogger {
  const levels = { error: "error", warning: "warn", info: "debug", debug: "trace" } as const;
  return new WorkerLogger((scope) => (level, message, meta) => {
    const method = levels[level as keyof typeof levels] ?? "info";
    logger[method]({ scope, ...meta }, message);
  });
}

/** Wraps each task so every execution leaves a row in job_runs for the Jobs page. */
function recordedTaskList(context: JobContext, catalog: JobCatalog, workerId: string): TaskList {
  const tasks: TaskList = {};
  zeroJobDurations(catalog.jobs.map((job) => job.identifier));
  for (const job of catalog.jobs) {
    tasks[job.identifier] = async (payload, helpers) => {
      const startedAt = Date.now();
      const sql = context.database.sql;
      const [runRow] = await sql<{ id: string }[]>`
        insert into job_runs (job_id, task_identifier, attempt, status, worker_id)
        values (${helpers.job.id}, ${job.identifier}, ${helpers.job.attempts}, 'running', ${workerId})
        returning id`;
      const finish = (status: "succeeded" | "failed", error?: string) => {
        jobDuration.observe({ task: job.identifier, status }, (Date.now() - startedAt) / 1000);
        return sql`
          update job_runs set status = ${status}, error = ${error ?? null}, finished_at = ${new Date()},
            duration_ms = ${Date.now() - startedAt}
          where id = ${runRow!.id}`;
      };
      const logger = context.logger.child({ job: job.identifier, jobId: helpers.job.id });
      try {
        await job.run(payload as never, { ...context, logger });
        await finish("succeeded");
      } catch (error) {
        logger.error({ err: error }, "job failed");
        await finish("failed", error instanceof Error ? error.message : String(error));
        throw error;
      }
    };
  }
  return tasks;
}

export interface JobRunner {
  workerId: string;
  /** Stops taking jobs, waits for running ones, then closes the worker's pool. */
  stop(): Promise<void>;
}

export async function startJobRunner(context: JobContext, catalog: JobCatalog): Promise<JobRunner> {
  const workerId = `${hostname()}:${process.pid}`;
  // We own the pool and end it after stop(), so no finished job stays locked (see STACK-NOTES).
  const pgPool = watchedPool(
    { connectionString: context.database.url, max: context.config.workerConcurrency + 2 },
    context.logger,
  );
  const runner: Runner = await run({
    pgPool,
    schema: WORKER_SCHEMA,
    concurrency: context.config.workerConcurrency,
    noHandleSignals: true,
    logger: workerLogger(context.logger),
    pollInterval: 2000,
    taskList: recordedTaskList(context, catalog, workerId),
    crontab: catalog.schedules.map((s) => `${s.cron} ${s.task} ?max=1`).join("\n"),
    preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
  });
  context.logger.info({ workerId, concurrency: context.config.workerConcurrency }, "job runner started");
  return {
    workerId,
    async stop() {
      await runner.stop();
      await pgPool.end();
    },
  };
}
