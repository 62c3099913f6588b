import { defineJob } from "../modules/jobs/service";
import { rollUpTelemetry } from "../modules/telemetry/service";

export default defineJob({
  identifier: "telemetry_rollup",
  description:
    "Folds new telemetry into the 6-minute and hourly rollups that day-or-longer charts and the dashboard read",
  async run(_payload, { database, logger }) {
    const run = await rollUpTelemetry(database.sql);
    if (run.windows > 1) logger.info(run, "rolled up telemetry");
  },
});
