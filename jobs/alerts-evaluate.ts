import { EVALUATE_TASK, evaluateAlerts, SETTLE_MS } from "../modules/alerts";
import { defineJob, enqueueJob } from "../modules/jobs/service";

/** How long one job keeps following the stream before it hands over to a fresh job. */
const FOLLOW_MS = 5000; // short: shutdown waits for a running job
/** After the last event, keep looking this long (events that arrive meanwhile need no wake-up). */
const TAIL_MS = 3000;

export default defineJob({
  identifier: EVALUATE_TASK,
  description:
    "Evaluates alert rules against new telemetry (woken by heartbeats; every minute as a safety net)",
  async run(_payload, { config, database, logger }) {
    // While telemetry keeps arriving, stay and evaluate again after a short pause (no queue round
    // trip); stop once nothing came for TAIL_MS. Bounded: after FOLLOW_MS a new job takes over.
    const started = Date.now();
    let lastEvents = Date.now();
    for (;;) {
      const result = await evaluateAlerts(database.sql, config);
      if (result.events > 0) {
        lastEvents = Date.now();
        logger.debug(result, "evaluated alert rules");
      }
      if (Date.now() - lastEvents >= TAIL_MS) return;
      if (Date.now() - started > FOLLOW_MS) {
        if (result.events > 0) {
          await enqueueJob(database.sql, EVALUATE_TASK, {}, { jobKey: EVALUATE_TASK, maxAttempts: 10 });
        }
        return;
      }
      if (!result.more) await Bun.sleep(Math.min(1000, SETTLE_MS));
    }
  },
});
