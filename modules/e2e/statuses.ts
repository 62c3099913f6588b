/** When a run and a result are final, and a run's status from its journeys' (what results.ts applies). */
import type { ResultStatus, RunStatus } from "./schema";

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
