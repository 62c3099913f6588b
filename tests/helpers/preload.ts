// One PostgreSQL for the whole `bun test` run; each test file clones the migrated template.
// Under `npm test` (scripts/test.ts) the wrapper owns the cluster and has set its URL already.
import { afterAll } from "bun:test";
import { startTestCluster } from "./cluster";

if (!process.env.OUTPOST_TEST_CLUSTER_URL) {
  // Set before the cluster starts: a signal while the template is still being built stops it too
  // (startTestCluster stops its PostgreSQL when the process exits).
  exitOnSignals();
  const cluster = await startTestCluster();
  process.env.OUTPOST_TEST_CLUSTER_URL = cluster.url;
  afterAll(async () => {
    await cluster.stop();
  });
}

/**
 * A signal ends the process without "exit" (`timeout`, Ctrl-C, a mutation run giving up on a test):
 * exiting instead lets the cluster's exit handler take PostgreSQL down, which every such run used to
 * leave behind.
 */
function exitOnSignals() {
  for (const [signal, code] of [
    ["SIGTERM", 143],
    ["SIGINT", 130],
    ["SIGHUP", 129],
  ] as const) {
    process.on(signal, () => process.exit(code));
  }
}
