// Run by evaluation.test.ts: evaluates, then waits inside the open transaction to be SIGKILLed.
import { evaluateAlerts } from "../../modules/alerts/evaluation";
import { loadConfig } from "../../modules/platform/config";
import { connectDatabase } from "../../modules/platform/database";

const database = connectDatabase(process.env.DATABASE_URL!);
const config = loadConfig({
  DATABASE_URL: process.env.DATABASE_URL,
  SECRET_KEY: "kill-child-secret-key-0123456789abcdef",
  LOG_LEVEL: "silent",
});
await evaluateAlerts(database.sql, config, {
  settleMs: 0,
  beforeCommit: async () => {
    process.stdout.write("paused\n");
    await Bun.sleep(60_000); // bounded: the test kills us long before
  },
});
await database.close();
