import { cancelStaleRuns, e2eConfigFor } from "../modules/e2e";
import { defineJob } from "../modules/jobs/service";

export default defineJob({
  identifier: "e2e_cancel_stale_runs",
  description: "Cancels E2E runs still active after run_timeout_s and clears environment locks nobody holds",
  async run(_payload, { config, database, logger }) {
    const e2e = e2eConfigFor(config);
    if (!e2e) return;
    const outcome = await cancelStaleRuns(database, e2e, logger);
    if (outcome.runsCancelled || outcome.locksCleared) logger.info(outcome, "E2E stale runs cancelled");
  },
});
