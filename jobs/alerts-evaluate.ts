import { EVALUATE_TASK, evaluateAlerts, SETTLE_MS } from "../modules/alerts/evaluation";
import { enqueueJob } from "../modules/jobs/queue";
import { defineJob } from "../modules/jobs/task";

/** How long one job keeps following the stream before it hands over to a fresh job. */
const FOLLOW_MS = 5000; // short: shutdown waits for a running job

export default defineJob({
  identifier: EVALUATE_TASK,
  description:
    "Evaluates alert rules against new telemetry (woken by heartbeats; every minute as a safety net)",
  async run(_payload, { config, database, logger }) {
    // While telemetry keeps arriving, stay and evaluate again after the settle delay (no queue
    // round trip); stop at the first empty run. Bounded: after FOLLOW_MS a new job takes over.
    const started = Date.now();
    for (;;) {
      const result = await evaluateAlerts(database.sql, config);
      if (result.events > 0) logger.debug(result, "evaluated alert rules");
      if (result.events === 0) return;
      if (Date.now() - started > FOLLOW_MS) {
        await enqueueJob(database.sql, EVALUATE_TASK, {}, { jobKey: EVALUATE_TASK, maxAttempts: 10 });
        return;
      }
      if (!result.more) await Bun.sleep(SETTLE_MS);
    }
  },
});
