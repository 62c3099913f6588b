import { deliverNotification, NOTIFY_TASK } from "../modules/alerts";
import { defineJob } from "../modules/jobs/service";

export default defineJob<{ notificationId: string }>({
  identifier: NOTIFY_TASK,
  description: "Sends one alert notification (email or signed webhook); retried with backoff for up to 24 h",
  async run(payload, { config, database, logger, webhook }) {
    const status = await deliverNotification(database.sql, config, payload.notificationId, webhook);
    logger.info({ notificationId: payload.notificationId, status }, "alert notification");
  },
});
