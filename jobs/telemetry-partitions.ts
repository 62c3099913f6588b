import { defineJob } from "../modules/jobs/service";
import { ensureTelemetryPartitions } from "../modules/telemetry/service";

/** Partitions exist this many days ahead, so a stopped worker has a week before the default partition fills. */
export const TELEMETRY_PARTITION_DAYS_AHEAD = 7;

export default defineJob({
  identifier: "telemetry_partitions",
  description: "Creates the daily telemetry partitions for the coming week",
  async run(_payload, { database, logger }) {
    const created = await ensureTelemetryPartitions(database.sql, TELEMETRY_PARTITION_DAYS_AHEAD);
    if (created > 0) logger.info({ created }, "created telemetry partitions");
  },
});
