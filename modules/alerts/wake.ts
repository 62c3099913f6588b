// The heartbeats' wake-up of alert evaluation (jobs/alerts-evaluate.ts runs the passes).
import type { Clock } from "../../shared/clock";
import { enqueueJob } from "../jobs/service";
import type { Sql } from "../platform/database";
import { EVALUATE_TASK, SETTLE_MS } from "./evaluation";

/**
 * A process wakes evaluation at most this often. While telemetry flows, passes schedule each other
 * (jobs/alerts-evaluate.ts), so a wake-up only matters after a silence; one every second was, at rest,
 * a queue insert and a dozen job polls a minute for nothing.
 */
export const WAKE_EVERY_MS = 5000;

/**
 * The heartbeat route's wake-up of alert evaluation (one per process, built by app.ts): called after a
 * heartbeat was stored, it schedules an evaluation run at most every WAKE_EVERY_MS, never awaited by
 * the heartbeat (off its hot path). A heartbeat inside that time is not dropped: one deferred wake-up
 * follows at its end, so every heartbeat is followed by one within WAKE_EVERY_MS even if it is the last
 * for a while. The job key keeps one pending run however many heartbeats arrive; `preserve_run_at`
 * keeps the time a pending pass has (a busy stream cannot postpone it forever, nor a wake-up pull a
 * thin stream's next pass forward).
 */
export function alertEvaluationWake(sql: Sql, clock: Clock): () => void {
  let lastWake = Number.NEGATIVE_INFINITY;
  let deferred = false;
  const wake = () => {
    const now = clock.now();
    const wait = lastWake + WAKE_EVERY_MS - now;
    if (wait > 0) {
      if (deferred) return;
      deferred = true;
      clock.setTimeout(() => {
        deferred = false;
        wake();
      }, wait);
      return;
    }
    lastWake = now;
    enqueueJob(
      sql,
      EVALUATE_TASK,
      {},
      {
        jobKey: EVALUATE_TASK,
        jobKeyMode: "preserve_run_at",
        delayMs: SETTLE_MS + 100,
        maxAttempts: 10,
      },
    ).catch(() => {
      lastWake = Number.NEGATIVE_INFINITY; // try again with the next heartbeat
    });
  };
  return wake;
}
