// One PostgreSQL for the whole `bun test` run; each test file clones the migrated template.
import { afterAll } from "bun:test";
import { startTestCluster } from "./cluster";

const cluster = await startTestCluster();
process.env.OUTPOST_TEST_CLUSTER_URL = cluster.url;

afterAll(async () => {
  await cluster.stop();
});
