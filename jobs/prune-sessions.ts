import { pruneRateCounters } from "../modules/devices/service";
import { defineJob, pruneJobHistory } from "../modules/jobs/service";
import { pruneExpiredSessions } from "../modules/operators/service";

export default defineJob({
  identifier: "prune_sessions",
  description:
    "Deletes expired operator sessions, stale login throttles and device API rate counters, and job history older than 30 days",
  async run(_payload, { database, logger }) {
    const { sessions, throttles } = await pruneExpiredSessions(database.db);
    const rateCounters = await pruneRateCounters(database.sql);
    const jobRuns = await pruneJobHistory(database);
    logger.info({ sessions, throttles, rateCounters, jobRuns }, "pruned expired sessions and history");
  },
});
