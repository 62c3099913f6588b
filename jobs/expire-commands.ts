import { expireCommands } from "../modules/commands/service";
import { defineJob } from "../modules/jobs/service";

export default defineJob({
  identifier: "expire_commands",
  description: "Marks device commands that were not delivered before their TTL as expired",
  async run(_payload, { database, logger }) {
    const expired = await expireCommands(database.sql);
    if (expired > 0) logger.info({ expired }, "expired undelivered commands");
  },
});
