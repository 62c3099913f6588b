import { deliverNotification } from "../modules/alerts/notifications/deliver";
import { NOTIFY_TASK } from "../modules/alerts/notifications/queue";
import { defineJob } from "../modules/jobs/task";

export default defineJob<{ notificationId: string }>({
  identifier: NOTIFY_TASK,
  description: "Sends one alert notification (email or signed webhook); retried with backoff for up to 24 h",
  async run(payload, { config, database, logger, webhook }) {
    const status = await deliverNotification(database.sql, config, payload.notificationId, webhook);
    logger.info({ notificationId: payload.notificationId, status }, "alert notification");
  },
});
