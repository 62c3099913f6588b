import { lt, sql } from "drizzle-orm";
import { deviceApiRateLimits } from "../modules/devices/schema";
import { jobRuns } from "../modules/jobs/schema";
import { defineJob } from "../modules/jobs/task";
import { loginThrottle, operatorSessions } from "../modules/operators/schema";

const JOB_HISTORY_DAYS = 30;

export default defineJob({
  identifier: "prune_sessions",
  description:
    "Deletes expired operator sessions, stale login throttles and device API rate counters, and job history older than 30 days",
  async run(_payload, { database, logger }) {
    const { db } = database;
    const sessions = await db.delete(operatorSessions).where(lt(operatorSessions.expiresAt, sql`now()`));
    const throttles = await db
      .delete(loginThrottle)
      .where(lt(loginThrottle.windowStartedAt, sql`now() - interval '1 day'`));
    // A counter whose window ended an hour ago limits nothing any more.
    const counters = await db
      .delete(deviceApiRateLimits)
      .where(lt(deviceApiRateLimits.windowStartedAt, sql`now() - interval '1 hour'`));
    const runs = await db
      .delete(jobRuns)
      .where(lt(jobRuns.startedAt, sql`now() - make_interval(days => ${JOB_HISTORY_DAYS})`));
    logger.info(
      {
        sessions: sessions.count,
        throttles: throttles.count,
        rateCounters: counters.count,
        jobRuns: runs.count,
      },
      "pruned expired sessions and history",
    );
  },
});
