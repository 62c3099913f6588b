import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";

export const RUN_STATUSES = ["queued", "running", "passed", "failed", "cancelled", "blocked"] as const;
export const RESULT_STATUSES = [
  "queued",
  "running",
  "passed",
  "failed",
  "cancelled",
  "blocked",
  "skipped",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export type ResultStatus = (typeof RESULT_STATUSES)[number];

/** One E2E run: a suite (or a subset of its journeys) executed by a runner against one environment. */
export const e2eRuns = pgTable(
  "e2e_runs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    suiteId: text("suite_id").notNull(),
    journeyIds: text("journey_ids").array().notNull(),
    environmentLabel: text("environment_label").notNull(),
    triggerSource: text("trigger_source", { enum: ["manual", "ci"] }).notNull(),
    protocolVersion: text("protocol_version").notNull(),
    runnerId: text("runner_id").notNull(),
    idempotencyKey: text("idempotency_key"),
    idempotencyExpiresAt: timestamp("idempotency_expires_at", { withTimezone: true }),
    status: text("status", { enum: RUN_STATUSES }).notNull().default("queued"),
    metadata: jsonb("metadata").notNull().default({}),
    startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    index("e2e_runs_started_at_idx").on(table.startedAt),
    index("e2e_runs_status_idx").on(table.status),
    index("e2e_runs_idempotency_idx").on(table.environmentLabel, table.idempotencyKey),
    // Journey health: the latest runs of one suite in one environment.
    index("e2e_runs_suite_environment_started_idx").on(
      table.suiteId,
      table.environmentLabel,
      table.startedAt.desc(),
    ),
    // Belt and braces behind the lock table: never two active runs for one environment.
    uniqueIndex("e2e_runs_one_active_per_environment")
      .on(table.environmentLabel)
      .where(sql`status in ('queued', 'running')`),
  ],
);

/** One row per journey of a run, created queued with the run. */
export const e2eRunResults = pgTable(
  "e2e_run_results",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    runId: uuid("run_id")
      .notNull()
      .references(() => e2eRuns.id, { onDelete: "cascade" }),
    journeyId: text("journey_id").notNull(),
    position: integer("position").notNull(),
    status: text("status", { enum: RESULT_STATUSES }).notNull().default("queued"),
    failureStep: text("failure_step"),
    failureReason: text("failure_reason"),
    logRef: text("log_ref"),
    startedAt: timestamp("started_at", { withTimezone: true }),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
    durationMs: bigint("duration_ms", { mode: "number" }),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [uniqueIndex("e2e_run_results_run_journey_idx").on(table.runId, table.journeyId)],
);

/** Journey logs (e2e_log.v1 JSONL) uploaded by runners; content null once pruned. */
export const e2eJourneyLogs = pgTable(
  "e2e_journey_logs",
  {
    runId: uuid("run_id")
      .notNull()
      .references(() => e2eRuns.id, { onDelete: "cascade" }),
    journeyId: text("journey_id").notNull(),
    content: text("content"),
    bytes: integer("bytes").notNull(),
    uploadedAt: timestamp("uploaded_at", { withTimezone: true }).notNull().defaultNow(),
    prunedAt: timestamp("pruned_at", { withTimezone: true }),
  },
  (table) => [primaryKey({ columns: [table.runId, table.journeyId] })],
);

/**
 * The environment lock: one row per locked environment. Taken before the seed (run_id still null),
 * bound to the run when it is persisted, deleted when the run reaches a final status.
 */
export const e2eEnvironmentLocks = pgTable("e2e_environment_locks", {
  environmentLabel: text("environment_label").primaryKey(),
  holder: uuid("holder").notNull(),
  runId: uuid("run_id").references(() => e2eRuns.id, { onDelete: "cascade" }),
  idempotencyKey: text("idempotency_key"),
  runnerId: text("runner_id").notNull(),
  acquiredAt: timestamp("acquired_at", { withTimezone: true }).notNull().defaultNow(),
});

/** One execution of an environment's seed command, done by the e2e_seed job. */
export const e2eSeedRuns = pgTable(
  "e2e_seed_runs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    environmentLabel: text("environment_label").notNull(),
    status: text("status", { enum: ["pending", "running", "succeeded", "failed"] })
      .notNull()
      .default("pending"),
    exitCode: integer("exit_code"),
    signal: text("signal"),
    timedOut: boolean("timed_out").notNull().default(false),
    stderrTail: text("stderr_tail"),
    durationMs: integer("duration_ms"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
  },
  (table) => [index("e2e_seed_runs_created_at_idx").on(table.createdAt)],
);
