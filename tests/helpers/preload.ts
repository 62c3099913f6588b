// One PostgreSQL for the whole `bun test` run; each test file clones the migrated template.
// Under `npm test` (scripts/test.ts) the wrapper owns the cluster and has set its URL already.
import { afterAll } from "bun:test";
import { startTestCluster } from "./cluster";

let postgresPid: number | undefined;
if (!process.env.OUTPOST_TEST_CLUSTER_URL) {
  // Set before the cluster starts: a signal while the template is still being built stops it too.
  stopOnSignals();
  const cluster = await startTestCluster((pid) => {
    postgresPid = pid;
  });
  process.env.OUTPOST_TEST_CLUSTER_URL = cluster.url;
  afterAll(async () => {
    await cluster.stop();
  });
}

// If the run dies before afterAll (an uncaught error, a signal), still take PostgreSQL down with it.
function stopPostgres() {
  if (postgresPid) {
    try {
      process.kill(postgresPid, "SIGQUIT");
    } catch {
      // already stopped
    }
  }
}

/**
 * A signal ends the process without "exit" (`timeout`, Ctrl-C, a mutation run giving up on a test):
 * without these handlers every such run left its PostgreSQL behind.
 */
function stopOnSignals() {
  process.on("exit", stopPostgres);
  for (const [signal, code] of [
    ["SIGTERM", 143],
    ["SIGINT", 130],
    ["SIGHUP", 129],
  ] as const) {
    process.on(signal, () => {
      stopPostgres();
      process.exit(code);
    });
  }
}
