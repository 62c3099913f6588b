import { pruneAudit } from "../modules/audit/service";
import { defineJob } from "../modules/jobs/service";

export default defineJob({
  identifier: "audit_retention",
  description: "Deletes audit events older than AUDIT_RETENTION_DAYS (default 365 days)",
  async run(_payload, { config, database, logger }) {
    const deleted = await pruneAudit(database, config.auditRetentionDays);
    logger.info({ deleted, retentionDays: config.auditRetentionDays }, "applied audit retention");
  },
});
