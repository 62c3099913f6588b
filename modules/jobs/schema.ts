import { index, integer, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

/** One row per execution of a durable job: graphile-worker forgets finished jobs, operators should not. */
export const jobRuns = pgTable(
  "job_runs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    jobId: text("job_id").notNull(),
    taskIdentifier: text("task_identifier").notNull(),
    attempt: integer("attempt").notNull(),
    status: text("status", { enum: ["running", "succeeded", "failed"] }).notNull(),
    startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
    durationMs: integer("duration_ms"),
    error: text("error"),
    workerId: text("worker_id"),
  },
  (table) => [
    index("job_runs_started_at_idx").on(table.startedAt),
    index("job_runs_task_started_at_idx").on(table.taskIdentifier, table.startedAt),
  ],
);
