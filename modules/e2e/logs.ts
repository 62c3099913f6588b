import type { Database, Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isPlainObject, isUuid } from "../platform/json-body";
import type { ResultRow } from "./model";
import { redact, redactText } from "./redaction";
import { RESULT_COLUMNS, runNotFound } from "./runs";

export function logRefFor(runId: string, journeyId: string): string {
  return `/e2e/runs/${runId}/results/${encodeURIComponent(journeyId)}/log`;
}

async function requireResult(sql: Sql, runId: string, journeyId: string): Promise<ResultRow> {
  if (!isUuid(runId)) throw runNotFound();
  const [run] = await sql`select 1 from e2e_runs where id = ${runId}`;
  if (!run) throw runNotFound();
  const [result] = await sql<ResultRow[]>`
    select ${sql.unsafe(RESULT_COLUMNS)} from e2e_run_results where run_id = ${runId} and journey_id = ${journeyId}`;
  if (!result) throw new AppError(404, "not_found", `Run ${runId} has no journey '${journeyId}'.`);
  return result;
}

/** Stores a journey's JSONL log (replacing an earlier upload) and points the result's log_ref at it. */
export async function storeLog(database: Database, runId: string, journeyId: string, content: string) {
  await requireResult(database.sql, runId, journeyId);
  const bytes = Buffer.byteLength(content);
  const logRef = logRefFor(runId, journeyId);
  await database.sql.begin(async (tx) => {
    await tx`
      insert into e2e_journey_logs (run_id, journey_id, content, bytes)
      values (${runId}, ${journeyId}, ${content}, ${bytes})
      on conflict (run_id, journey_id) do update
        set content = excluded.content, bytes = excluded.bytes, uploaded_at = now(), pruned_at = null`;
    await tx`update e2e_run_results set log_ref = ${logRef}, updated_at = now() where run_id = ${runId} and journey_id = ${journeyId}`;
  });
  return { run_id: runId, journey_id: journeyId, log_ref: logRef, bytes };
}

/** GET …/log: 404 unknown run/result or never a log; 410 pruned or content missing. */
export async function readLog(database: Database, runId: string, journeyId: string) {
  const result = await requireResult(database.sql, runId, journeyId);
  const [log] = await database.sql<{ content: string | null; pruned_at: Date | null }[]>`
    select content, pruned_at from e2e_journey_logs where run_id = ${runId} and journey_id = ${journeyId}`;
  if (!log) {
    if (!result.log_ref)
      throw new AppError(404, "not_found", `Journey '${journeyId}' of run ${runId} has no log.`);
    throw new AppError(410, "log_unavailable", "Log is unavailable: its content is missing.", {
      log_ref: result.log_ref,
    });
  }
  if (log.content === null) {
    throw new AppError(410, "log_unavailable", "Log is unavailable: it was pruned by the retention policy.", {
      pruned_at: log.pruned_at?.toISOString() ?? null,
    });
  }
  return { run_id: runId, journey_id: journeyId, content: log.content };
}

export interface JourneyLogLine {
  kind: "journey" | "step" | "invalid";
  raw: string;
  entry?: Record<string, unknown>;
  problem?: string;
}

/**
 * Parses e2e_log.v1 JSONL for display, secrets redacted whoever wrote the log (viewers see it);
 * lines that are not the v1 schema are shown as problems.
 */
export function parseJourneyLog(content: string): JourneyLogLine[] {
  return content
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((raw) => {
      let entry: unknown;
      try {
        entry = JSON.parse(raw);
      } catch {
        return {
          kind: "invalid",
          raw: redactText(raw),
          problem: "Not JSON (expected e2e_log.v1)",
        } satisfies JourneyLogLine;
      }
      if (!isPlainObject(entry))
        return {
          kind: "invalid",
          raw: redactText(raw),
          problem: "Not a JSON object",
        } satisfies JourneyLogLine;
      if (entry.schema !== "e2e_log.v1") {
        return {
          kind: "invalid",
          raw: redactText(raw),
          problem:
            entry.schema === undefined ? "Missing schema" : `Unsupported log schema: ${String(entry.schema)}`,
        } satisfies JourneyLogLine;
      }
      return {
        kind: entry.level === "step" ? "step" : "journey",
        raw: redactText(raw),
        entry: redact(entry) as Record<string, unknown>,
      } satisfies JourneyLogLine;
    });
}
