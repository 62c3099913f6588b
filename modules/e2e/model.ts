import { RESULT_STATUSES, type ResultStatus, type RunStatus } from "./schema";

/** E2ERun as it goes on the wire. */
export interface RunView {
  id: string;
  suite_id: string;
  journey_ids: string[];
  environment_label: string;
  trigger_source: "manual" | "ci";
  protocol_version: string;
  status: RunStatus;
  started_at: string;
  finished_at: string | null;
}

/** E2ERunResult as it goes on the wire. */
export interface ResultView {
  id: string;
  journey_id: string;
  status: ResultStatus;
  failure_step: string | null;
  failure_reason: string | null;
  log_ref: string | null;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
}

export interface RunRow {
  id: string;
  suite_id: string;
  journey_ids: string[];
  environment_label: string;
  trigger_source: "manual" | "ci";
  protocol_version: string;
  runner_id: string;
  idempotency_key: string | null;
  status: RunStatus;
  metadata: Record<string, unknown>;
  started_at: Date;
  finished_at: Date | null;
}

export interface ResultRow {
  id: string;
  run_id: string;
  journey_id: string;
  position: number;
  status: ResultStatus;
  failure_step: string | null;
  failure_reason: string | null;
  log_ref: string | null;
  started_at: Date | null;
  finished_at: Date | null;
  duration_ms: number | null;
}

const iso = (value: Date | null | undefined) => (value ? value.toISOString() : null);

export function runView(row: RunRow): RunView {
  return {
    id: row.id,
    suite_id: row.suite_id,
    journey_ids: row.journey_ids,
    environment_label: row.environment_label,
    trigger_source: row.trigger_source,
    protocol_version: row.protocol_version,
    status: row.status,
    started_at: row.started_at.toISOString(),
    finished_at: iso(row.finished_at),
  };
}

export function resultView(row: ResultRow): ResultView {
  return {
    id: row.id,
    journey_id: row.journey_id,
    status: row.status,
    failure_step: row.failure_step,
    failure_reason: row.failure_reason,
    log_ref: row.log_ref,
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    duration_ms: row.duration_ms === null ? null : Number(row.duration_ms),
  };
}

export const FINAL_RUN_STATUSES: readonly RunStatus[] = ["passed", "failed", "cancelled", "blocked"];
export const FINAL_RESULT_STATUSES: readonly ResultStatus[] = [
  "passed",
  "failed",
  "cancelled",
  "blocked",
  "skipped",
];

export function isFinalRun(status: string): boolean {
  return (FINAL_RUN_STATUSES as readonly string[]).includes(status);
}

export function isFinalResult(status: string): boolean {
  return (FINAL_RESULT_STATUSES as readonly string[]).includes(status);
}

export function isResultStatus(value: unknown): value is ResultStatus {
  return typeof value === "string" && (RESULT_STATUSES as readonly string[]).includes(value);
}

/**
 * A run's status from its journeys: any failed → failed; else any queued/running → running;
 * else any blocked/skipped → blocked; else all cancelled → cancelled; else passed.
 */
export function aggregateRunStatus(statuses: readonly ResultStatus[]): RunStatus {
  if (statuses.includes("failed")) return "failed";
  if (statuses.some((s) => s === "queued" || s === "running")) return "running";
  if (statuses.some((s) => s === "blocked" || s === "skipped")) return "blocked";
  if (statuses.length > 0 && statuses.every((s) => s === "cancelled")) return "cancelled";
  return "passed";
}

/** drizzle hands postgres.js timestamps through as text ("2026-01-02 03:04:05.678+00"): make Dates. */
export function toDate(value: Date | string | null | undefined): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  return new Date(value.replace(" ", "T").replace(/([+-]\d{2})$/, "$1:00"));
}

export function runRow<T extends RunRow>(raw: T): T {
  return { ...raw, started_at: toDate(raw.started_at)!, finished_at: toDate(raw.finished_at) };
}

export function resultRow(raw: ResultRow): ResultRow {
  return { ...raw, started_at: toDate(raw.started_at), finished_at: toDate(raw.finished_at) };
}
