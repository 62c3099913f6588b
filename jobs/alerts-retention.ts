import { deleteExpiredAlerts } from "../modules/alerts";
import { defineJob } from "../modules/jobs/service";

export default defineJob({
  identifier: "alerts_retention",
  description: "Deletes resolved alerts older than ALERT_RETENTION_DAYS (default 180 days)",
  async run(_payload, { config, database, logger }) {
    const deleted = await deleteExpiredAlerts(database.sql, config.alertRetentionDays);
    logger.info({ deleted, retentionDays: config.alertRetentionDays }, "applied alert retention");
  },
});
