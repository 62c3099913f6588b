import { defineJob } from "../modules/jobs/service";
import {
  dropExpiredRecentRollups,
  dropExpiredRollups,
  dropExpiredTelemetry,
} from "../modules/telemetry/service";

export default defineJob({
  identifier: "telemetry_retention",
  description:
    "Drops daily telemetry partitions older than the retention period (default 30 days), hourly rollups older than it (at least 30 days) and 6-minute rollups older than 2 days",
  async run(_payload, { settings, database, logger }) {
    const { telemetryRetentionDays } = await settings.device();
    const dropped = await dropExpiredTelemetry(database.sql, telemetryRetentionDays);
    const rollups = await dropExpiredRollups(database.sql, telemetryRetentionDays);
    const recentDropped = await dropExpiredRecentRollups(database.sql);
    logger.info(
      { dropped, rollups, recentDropped, retentionDays: telemetryRetentionDays },
      "applied telemetry retention",
    );
  },
});
