import { enqueueJob } from "../modules/jobs/service";
import { defineJob } from "../modules/jobs/task";
import { sweepLeases } from "../modules/remote-access/service";
import { deviceSettings } from "../modules/settings/service";

/**
 * Cron runs this every minute; each cron run also schedules one follow-up 30 s later, so leases are swept
 * at least every 30 s (graphile-worker's cron has minute granularity).
 */
export default defineJob<{ followUp?: boolean }>({
  identifier: "remote_access_sweep",
  description: "Ends remote-access leases that expired or whose device went offline (every 30 s)",
  async run(payload, { config, database, logger }) {
    if (!payload?.followUp) {
      await enqueueJob(
        database.sql,
        "remote_access_sweep",
        { followUp: true },
        { jobKey: "remote_access_sweep:half", maxAttempts: 1, runAt: new Date(Date.now() + 30_000) },
      );
    }
    const settings = await deviceSettings(config);
    const ended = await sweepLeases(database.sql, settings.onlineWindowSeconds);
    if (ended > 0) logger.info({ ended }, "ended remote-access leases");
  },
});
