import { pruneSightings } from "../modules/devices/service";
import { defineJob } from "../modules/jobs/service";

export default defineJob({
  identifier: "device_sightings_prune",
  description:
    "Deletes device sightings older than 15 minutes, keeping each silent device's latest (the device list reads them to order by last seen and to find who is online)",
  async run(_payload, { database, logger }) {
    const { pruned, kept } = await pruneSightings(database.sql);
    if (pruned > 0) logger.debug({ pruned, kept }, "pruned device sightings");
  },
});
