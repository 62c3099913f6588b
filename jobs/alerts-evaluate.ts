import { EVALUATE_TASK, evaluateAlerts, SETTLE_MS } from "../modules/alerts/evaluation";
import { enqueueJob } from "../modules/jobs/queue";
import { defineJob } from "../modules/jobs/task";

export default defineJob({
  identifier: EVALUATE_TASK,
  description:
    "Evaluates alert rules against new telemetry (woken by heartbeats; every minute as a safety net)",
  async run(_payload, { config, database, logger }) {
    const result = await evaluateAlerts(database.sql, config);
    if (result.events > 0) logger.debug(result, "evaluated alert rules");
    // A full batch: go on at once. Otherwise one more run after the settle delay picks up the
    // heartbeats that were too recent for this one; it finds nothing and the chain stops.
    if (result.more || result.events > 0) {
      await enqueueJob(
        database.sql,
        EVALUATE_TASK,
        {},
        {
          jobKey: EVALUATE_TASK,
          maxAttempts: 10,
          runAt: new Date(Date.now() + (result.more ? 0 : SETTLE_MS + 200)),
        },
      );
    }
  },
});
