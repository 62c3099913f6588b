import { pruneTelemetrySchemas } from "../modules/devices/service";
import { defineJob } from "../modules/jobs/service";

export default defineJob({
  identifier: "telemetry_schemas_prune",
  description:
    "Deletes the telemetry schemas no device has any more and nobody announced for a day (a device that changes its schema leaves the old one behind)",
  async run(_payload, { database, logger }) {
    const pruned = await pruneTelemetrySchemas(database.sql);
    if (pruned > 0) logger.info({ pruned }, "pruned unused telemetry schemas");
  },
});
