import { Elysia } from "elysia";
import type { AppContext } from "../platform/context";
import { csvResponse, keysetBatches } from "../platform/csv";

const COLUMNS = [
  "id",
  "task",
  "status",
  "attempt",
  "started_at",
  "finished_at",
  "duration_ms",
  "worker_id",
  "error",
];

type RunRow = {
  id: string;
  task_identifier: string;
  status: string;
  attempt: number;
  started_at: string;
  finished_at: Date | null;
  duration_ms: number | null;
  worker_id: string | null;
  error: string | null;
};

/** `GET /jobs/runs.csv[?task=]`: every recorded job run, newest first, streamed 1,000 at a time. */
export function jobRunCsvRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  return new Elysia({ name: "job-runs-csv" }).use(ctx.access).get(
    "/jobs/runs.csv",
    ({ request }) => {
      const task = new URL(request.url).searchParams.get("task")?.slice(0, 100) || undefined;
      const batches = keysetBatches(
        async (after: [string, string] | undefined) => {
          const rows = await sql<RunRow[]>`
            select id, task_identifier, status, attempt,
              to_char(started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as started_at,
              finished_at, duration_ms, worker_id, error
            from job_runs where true
              ${task ? sql`and task_identifier = ${task}` : sql``}
              ${after ? sql`and (started_at, id) < (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
            order by started_at desc, id desc limit 1000`;
          const last = rows[rows.length - 1];
          // (started_at, id) only moves backwards; a short page is the last.
          return {
            items: rows,
            next: last && rows.length === 1000 ? ([last.started_at, last.id] as [string, string]) : undefined,
          };
        },
        (r) => [
          r.id,
          r.task_identifier,
          r.status,
          r.attempt,
          r.started_at,
          r.finished_at,
          r.duration_ms,
          r.worker_id,
          r.error,
        ],
      );
      return csvResponse(`job-runs-${new Date().toISOString().slice(0, 10)}.csv`, COLUMNS, batches);
    },
    { access: "viewer" },
  );
}
