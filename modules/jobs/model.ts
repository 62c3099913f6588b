import { type TSchema, Type } from "@sinclair/typebox";
import { ConsoleForm, FormText } from "../platform/schemas";
import type { JobOverview, JobRun, QueuedJob } from "./service";

const Time = Type.String({ format: "date-time" });
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** `POST /api/v1/jobs/:task/run`: a task of the catalog (`GET /api/v1/jobs` lists them). */
export const JobTaskParams = Type.Object({
  task: Type.String({ maxLength: 100, description: "A task identifier (`tasks[].identifier`)" }),
});

const QueuedJobSchema = Type.Object({
  id: Type.String(),
  taskIdentifier: Type.String(),
  runAt: Time,
  attempts: Type.Integer(),
  maxAttempts: Type.Integer(),
  lastError: Nullable(Type.String()),
  lockedAt: Nullable(Time),
  lockedBy: Nullable(Type.String()),
  createdAt: Time,
});

const JobRunSchema = Type.Object({
  id: Type.String({ format: "uuid" }),
  jobId: Type.String(),
  taskIdentifier: Type.String(),
  attempt: Type.Integer(),
  status: Type.Union([Type.Literal("running"), Type.Literal("succeeded"), Type.Literal("failed")]),
  startedAt: Time,
  finishedAt: Nullable(Time),
  durationMs: Type.Union([Type.Integer(), Type.Null()]),
  error: Nullable(Type.String()),
  workerId: Nullable(Type.String()),
});

/** `GET /api/v1/jobs` → 200: the queue's counts, what waits, the recent runs and the tasks known. */
export const JobsReply = Type.Object({
  data: Type.Object({
    overview: Type.Object({
      queued: Type.Integer(),
      running: Type.Integer(),
      failed: Type.Integer(),
      succeeded24h: Type.Integer(),
      failed24h: Type.Integer(),
    }),
    queue: Type.Array(QueuedJobSchema),
    runs: Type.Array(JobRunSchema),
    tasks: Type.Array(
      Type.Object({
        identifier: Type.String(),
        description: Type.String(),
        schedule: Type.Optional(
          Type.Object({ task: Type.String(), cron: Type.String(), label: Type.String() }),
        ),
      }),
    ),
  }),
});

/** `POST /api/v1/jobs/:task/run` → 202: the job queued. */
export const JobQueuedReply = Type.Object({
  data: Type.Object({ job_id: Type.String(), task: Type.String() }),
});

/** The jobs overview on the wire (timestamps as ISO 8601, as JSON writes dates). */
export function jobsJson(overview: JobOverview, queue: QueuedJob[], runs: JobRun[]) {
  return {
    overview,
    queue: queue.map((job) => ({
      ...job,
      runAt: job.runAt.toISOString(),
      lockedAt: job.lockedAt?.toISOString() ?? null,
      createdAt: job.createdAt.toISOString(),
    })),
    runs: runs.map((run) => ({
      ...run,
      startedAt: run.startedAt.toISOString(),
      finishedAt: run.finishedAt?.toISOString() ?? null,
    })),
  };
}

/** The jobs page's "Run now": the task to queue. */
export const RunJobForm = ConsoleForm({ task: FormText(100) });
