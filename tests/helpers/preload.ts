// One PostgreSQL for the whole `bun test` run; each test file clones the migrated template.
import { afterAll } from "bun:test";
import { startTestCluster } from "./cluster";

const cluster = await startTestCluster();
process.env.OUTPOST_TEST_CLUSTER_URL = cluster.url;

afterAll(async () => {
  await cluster.stop();
});

// If the run dies before afterAll (an uncaught error, a signal), still take PostgreSQL down with it.
process.on("exit", () => {
  if (cluster.pid) {
    try {
      process.kill(cluster.pid, "SIGQUIT");
    } catch {
      // already stopped
    }
  }
});
