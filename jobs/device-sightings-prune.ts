import { pruneSightings } from "../modules/devices/service";
import { defineJob } from "../modules/jobs/task";

export default defineJob({
  identifier: "device_sightings_prune",
  description:
    "Deletes device sightings older than 15 minutes (the device list reads the recent ones to find who was seen last and who is online)",
  async run(_payload, { database, logger }) {
    const deleted = await pruneSightings(database.sql);
    if (deleted > 0) logger.debug({ deleted }, "pruned device sightings");
  },
});
