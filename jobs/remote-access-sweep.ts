import { defineJob, enqueueJob } from "../modules/jobs/service";
import { sweepLeases } from "../modules/remote-access/service";

/**
 * Cron runs this every minute; each cron run also schedules one follow-up 30 s later, so leases are swept
 * at least every 30 s (graphile-worker's cron has minute granularity).
 */
export default defineJob<{ followUp?: boolean }>({
  identifier: "remote_access_sweep",
  description: "Ends remote-access leases that expired or whose device went offline (every 30 s)",
  async run(payload, { settings, database, logger }) {
    if (!payload?.followUp) {
      await enqueueJob(
        database.sql,
        "remote_access_sweep",
        { followUp: true },
        { jobKey: "remote_access_sweep:half", maxAttempts: 1, runAt: new Date(Date.now() + 30_000) },
      );
    }
    const { onlineWindowSeconds } = await settings.device();
    const ended = await sweepLeases(database.sql, onlineWindowSeconds);
    if (ended > 0) logger.info({ ended }, "ended remote-access leases");
  },
});
