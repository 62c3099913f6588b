import { defineJob } from "../modules/jobs/service";
import { pruneRecordings, sweepSessions } from "../modules/terminal/service";

export default defineJob({
  identifier: "terminal_retention",
  description:
    "Ends terminal sessions past their key's lifetime and deletes sessions and recordings older than TERMINAL_RECORDING_RETENTION_DAYS (default 90 days)",
  async run(_payload, { config, database, logger }) {
    const ended = await sweepSessions(database.sql);
    const deleted = await pruneRecordings(database.sql, config.terminalRecordingRetentionDays);
    logger.info(
      { ended, deleted, retentionDays: config.terminalRecordingRetentionDays },
      "applied terminal session retention",
    );
  },
});
