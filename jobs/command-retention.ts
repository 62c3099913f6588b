import { pruneCommandHistory, pruneUnmatchedResults } from "../modules/commands/service";
import { defineJob } from "../modules/jobs/service";

export default defineJob({
  identifier: "command_retention",
  description:
    "Deletes device command history (and results for no command) older than COMMAND_RETENTION_DAYS (default 90 days)",
  async run(_payload, { config, database, logger }) {
    const deleted = await pruneCommandHistory(database.sql, config.commandRetentionDays);
    const unmatched = await pruneUnmatchedResults(database.sql, config.commandRetentionDays);
    logger.info(
      { deleted, unmatched, retentionDays: config.commandRetentionDays },
      "applied command retention",
    );
  },
});
