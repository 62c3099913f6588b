import { checkOfflineDevices } from "../modules/alerts";
import { defineJob } from "../modules/jobs/service";

export default defineJob({
  identifier: "alerts_offline",
  description:
    "Raises an offline alert for approved devices silent beyond the Settings offline window; resolves the open alerts of deleted, rejected or revoked devices",
  async run(_payload, { config, database, logger }) {
    const { opened, resolvedRemoved } = await checkOfflineDevices(database.sql, config);
    if (opened > 0) logger.info({ opened }, "raised offline alerts");
    if (resolvedRemoved > 0) logger.info({ resolved: resolvedRemoved }, "resolved alerts of removed devices");
  },
});
