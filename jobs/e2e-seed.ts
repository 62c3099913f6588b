import { e2eConfigFor, executeSeedJob, SEED_TASK } from "../modules/e2e";
import { defineJob } from "../modules/jobs/service";

export default defineJob<{ seed_id: string }>({
  identifier: SEED_TASK,
  description: "Runs an E2E environment's seed command (with its timeout) for a run being created",
  async run(payload, { config, database, logger }) {
    const e2e = e2eConfigFor(config);
    if (!e2e) throw new Error("E2E is not configured in this process (E2E_CONFIG)");
    const outcome = await executeSeedJob(database, e2e, payload.seed_id, logger);
    // Recorded as failed in job_runs too; max_attempts is 1, so it never retries on its own.
    if (outcome && !outcome.ok)
      throw new Error(
        outcome.timedOut ? "seed timed out" : `seed exited with ${outcome.exitCode ?? outcome.signal}`,
      );
  },
});
