import { e2eConfigFor, pruneRetention } from "../modules/e2e";
import { defineJob } from "../modules/jobs/service";

export default defineJob({
  identifier: "e2e_retention",
  description: "Prunes finished E2E runs and journey logs by age, run count and total log bytes",
  async run(_payload, { config, database, logger }) {
    const e2e = e2eConfigFor(config);
    if (!e2e) return;
    const outcome = await pruneRetention(database, e2e);
    logger.info(
      outcome,
      `E2E retention pruned ${outcome.runsDeleted} runs and ${outcome.bytesPruned} bytes of logs`,
    );
  },
});
