import postgres from "postgres";
import { benchLifecycle } from "../lifecycle";
import { heartbeatBodyText } from "./body";
import { measureCeilings } from "./ceilings";
import { startBenchDatabase } from "./database";
import { knob as flagKnob } from "./flags";
import { heartbeatFloor, measureHttpFloor } from "./floor";
import { FleetLoad, shuffle } from "./load";
import { reportMetricsRounds, runMetricsRounds } from "./metrics-rounds";
import {
  cpuSeconds,
  databaseCounters,
  machineCpu,
  machineShares,
  mainThreadCpuSeconds,
  postgresCpuByRole,
  statements,
} from "./probes";
import { reportHeartbeatRun, statementDeltas } from "./report";
import { seedFleet } from "./seed";
import { BENCH_METRICS_TOKEN, startBenchServer } from "./server";

const knob = (flag: string, env: string, fallback: number) =>
  flagKnob("bench:heartbeat", flag, env, fallback);
if (process.argv.includes("--help")) {
  console.log(`npm run bench:heartbeat -- [--devices 200000] [--telemetry-rows 10000000] [--concurrency 64]
  [--duration 10] [--warmup 2] [--web-processes 1] [--metrics-rounds 0] [--in-registration-order]
  (or the environment variables in the file's header)`);
  process.exit(0);
}
/** Registered devices, written straight into the table; the load visits each once per round (in a fixed
 * shuffled order, below), so at the measured rate no device comes near its 30 heartbeats a minute (no
 * cheap 429s in the figure). */
const DEVICES = knob("devices", "DEVICES", 200_000);
/** Telemetry rows already present (spread over the last 2 days), so indexes have a real fleet's size. */
const TELEMETRY_ROWS = knob("telemetry-rows", "TELEMETRY_ROWS", 10_000_000);
/**
 * Devices poll at independent moments, so consecutive heartbeats touch unrelated rows: the load visits
 * the fleet in a fixed shuffled order. In registration order (the flag) every heap page's devices beat
 * within the same milliseconds, before PostgreSQL can prune their old row versions, and ~40 % of the
 * updates stop being heap-only: the worst case of a fleet that booted together, measured apart.
 */
const IN_REGISTRATION_ORDER = process.argv.includes("--in-registration-order");
const CONCURRENCY = knob("concurrency", "CONCURRENCY", 64);
const DURATION_S = knob("duration", "DURATION", 10);
/** Outpost web processes sharing the load (callers split evenly), as behind a load balancer. */
const WEB_PROCESSES = Math.max(1, knob("web-processes", "WEB_PROCESSES", 1));
const WARMUP_S = knob("warmup", "WARMUP", 2);
/** More than this share of answers that are not 200 makes the run fail (its rate would flatter). */
const MAX_NON_200 = 0.001;
const EPHEMERAL = process.env.BENCH_EPHEMERAL === "1";
const SERVER_POOL = 10; // connectDatabase's default pool size, used by the server
/** Rounds of metrics-off vs metrics-on load, alternated, after the main measurement (0: skip). */
const METRICS_ROUNDS = knob("metrics-rounds", "METRICS_ROUNDS", 0);
/** Seconds between scrapes of /metrics while the metrics server is loaded (0: never). */
const SCRAPE_EVERY_S = Number(process.env.METRICS_SCRAPE_EVERY ?? 1);
/** Seconds each side of a round is measured. */
const METRICS_PHASE_S = Number(process.env.METRICS_PHASE ?? 5);
const HARD_LIMIT_MS =
  // The load, four ceilings and the HTTP floor, each with its warm-up.
  (DURATION_S * 6 +
    WARMUP_S * 6 +
    METRICS_ROUNDS * 2 * (METRICS_PHASE_S + WARMUP_S) +
    240 +
    DEVICES / 5000 +
    // Seeding ran at 21,000 rows/s on a busy 2-core machine (10 M rows: 475 s).
    TELEMETRY_ROWS / 10_000) *
  1000;

const { cleanups, run } = benchLifecycle(HARD_LIMIT_MS);

async function main() {
  console.log(
    `heartbeat benchmark: ${DEVICES} devices${IN_REGISTRATION_ORDER ? " in registration order" : ""}, ${CONCURRENCY} concurrent${WEB_PROCESSES > 1 ? ` over ${WEB_PROCESSES} web processes` : ""}, ${DURATION_S}s (+${WARMUP_S}s warm-up), PostgreSQL ${EPHEMERAL ? "without fsync" : "durable (fsync on)"}`,
  );

  // 1. PostgreSQL with pg_stat_statements.
  const { url: databaseUrl, postgresPid } = await startBenchDatabase({ ephemeral: EPHEMERAL, cleanups });

  // 2. Outpost in its own processes (web role: HTTP only): one serving metrics (METRICS_TOKEN, scraped
  // every second while it is loaded) and one without, against the same database.
  const startServer = (extraEnv: Record<string, string>) =>
    startBenchServer({ databaseUrl, extraEnv, cleanups });
  // METRICS_CONTROL=1: both servers without metrics (an A/A run: what differs between two servers).
  const control = process.env.METRICS_CONTROL === "1";
  // --web-processes: the first serves metrics, the others share the load with it.
  const web = [await startServer(control ? {} : { METRICS_TOKEN: BENCH_METRICS_TOKEN })];
  while (web.length < WEB_PROCESSES) web.push(await startServer({}));
  const { child: server, url: base } = web[0]!;
  const webPids = web.map((s) => s.child.pid!);
  const webCpu = () => webPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const eventLoops = () => webPids.map(mainThreadCpuSeconds);
  const withoutMetrics = METRICS_ROUNDS > 0 ? await startServer({}) : undefined;
  /** Scrapes the metrics server every SCRAPE_EVERY_S seconds while `scraping` (Prometheus' usual: 15-60). */
  let scraping = false;
  let stopScraper = false;
  const scrapeMs: number[] = [];
  const scraper = (async () => {
    while (!stopScraper && SCRAPE_EVERY_S > 0 && !control) {
      if (scraping) {
        const started = performance.now();
        const response = await fetch(`${base}/metrics`, {
          headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` },
        }).catch(() => undefined);
        if (response?.status !== 200) throw new Error(`metrics scrape answered ${response?.status}`);
        await response.text();
        scrapeMs.push(performance.now() - started);
      }
      await Bun.sleep(SCRAPE_EVERY_S * 1000);
    }
  })();
  cleanups.push(async () => {
    stopScraper = true;
    await scraper.catch(() => {});
  });

  // 3. Devices: register, approve, register again for the token.
  const db = postgres(databaseUrl, { max: SERVER_POOL, onnotice: () => {} });
  cleanups.push(() => db.end({ timeout: 5 }));
  await db.unsafe("create extension if not exists pg_stat_statements");
  if (process.env.BENCH_WITHOUT_LIVE_TRIGGER === "1") {
    // To measure what the console's live-update trigger (migration 0005) costs each heartbeat.
    await db.unsafe("alter table devices disable trigger devices_live_notify_update");
  }
  const { devices, macs } = await seedFleet(db, DEVICES, TELEMETRY_ROWS);
  if (!IN_REGISTRATION_ORDER) shuffle(devices);
  const bodyText = heartbeatBodyText();
  console.log(`  heartbeat body ${bodyText(macs[0]!, 1).length} bytes`);

  // 4. Load: CONCURRENCY callers, each posting heartbeats of the next device in turn.
  const load = new FleetLoad(devices, bodyText);
  let measuring = false;
  let stop = false;
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  let networkErrors = 0;
  const callers = load.callers(
    CONCURRENCY,
    web.map((s) => s.url),
    () => stop,
    (status, ms) => {
      if (!measuring) return;
      if (status === undefined) networkErrors++;
      else {
        latencies.push(ms);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    },
  );
  await Bun.sleep(WARMUP_S * 1000);
  const statsBefore = await statements(db);
  const countersBefore = await databaseCounters(db);
  const cpuBefore = {
    server: webCpu(),
    client: process.cpuUsage(),
    postgres: postgresPid ? cpuSeconds(postgresPid, true) : Number.NaN,
  };
  const byRoleBefore = postgresPid ? postgresCpuByRole(postgresPid) : new Map<string, number>();
  const machineBefore = machineCpu();
  const eventLoopsBefore = eventLoops();
  measuring = true;
  const startedAt = performance.now();
  await Bun.sleep(DURATION_S * 1000);
  measuring = false;
  const elapsedS = (performance.now() - startedAt) / 1000;
  const clientCpu = process.cpuUsage(cpuBefore.client);
  const machine = machineShares(machineBefore, machineCpu());
  const eventLoopsBusy = eventLoops().map(
    (seconds, i) => (100 * (seconds - eventLoopsBefore[i]!)) / elapsedS,
  );
  const cpu = {
    server: webCpu() - cpuBefore.server,
    client: (clientCpu.user + clientCpu.system) / 1e6,
    postgres: postgresPid ? cpuSeconds(postgresPid, true) - cpuBefore.postgres : Number.NaN,
  };
  const postgresByRole = postgresPid ? postgresCpuByRole(postgresPid) : new Map<string, number>();
  for (const [role, seconds] of byRoleBefore)
    postgresByRole.set(role, (postgresByRole.get(role) ?? 0) - seconds);
  const countersAfter = await databaseCounters(db);
  const statsAfter = await statements(db);
  stop = true;
  await callers;
  latencies.sort((a, b) => a - b);

  // 5. The ceilings: the same telemetry rows straight into PostgreSQL, same pool size.
  const ceilings = await measureCeilings({
    databaseUrl,
    devices,
    pool: SERVER_POOL,
    callers: CONCURRENCY,
    durationS: DURATION_S,
    warmupS: WARMUP_S,
    postgresPid,
  });
  // 6. The floor: the same bodies to a bare server, plus the rows at the ceilings' multi-row price.
  const httpFloor = await measureHttpFloor(load, {
    concurrency: CONCURRENCY,
    durationS: DURATION_S,
    warmupS: WARMUP_S,
  });
  const floor = heartbeatFloor(
    httpFloor,
    ceilings.multiRow,
    ceilings.deviceRows,
    navigator.hardwareConcurrency,
  );
  const { summary, failed } = reportHeartbeatRun({
    devices: DEVICES,
    inRegistrationOrder: IN_REGISTRATION_ORDER,
    telemetryRows: TELEMETRY_ROWS,
    concurrency: CONCURRENCY,
    durationS: DURATION_S,
    pool: SERVER_POOL,
    elapsedS,
    latencies,
    statuses,
    networkErrors,
    cpu,
    machine,
    eventLoopsBusy,
    postgresByRole,
    counters: { before: countersBefore, after: countersAfter },
    statements: statementDeltas(statsBefore, statsAfter),
    ceilings,
    floor,
    maxNon200: MAX_NON_200,
  });
  if (failed) process.exitCode = 1;
  finalLine = summary;

  // 7. Metrics on vs off: alternated rounds (off-on, on-off, …) against the two servers, the metrics
  // one scraped every second. Off = no METRICS_TOKEN/METRICS_PORT: requests are not timed.
  if (!withoutMetrics) return;
  const phases = await runMetricsRounds({
    load,
    concurrency: CONCURRENCY,
    warmupS: WARMUP_S,
    warmServerS: DURATION_S,
    rounds: METRICS_ROUNDS,
    phaseSeconds: METRICS_PHASE_S,
    withMetrics: { url: base, pid: server.pid! },
    withoutMetrics: { url: withoutMetrics.url, pid: withoutMetrics.child.pid! },
    postgresPid,
    scrape: (on) => {
      scraping = on;
    },
  });
  reportMetricsRounds(phases, {
    rounds: METRICS_ROUNDS,
    phaseSeconds: METRICS_PHASE_S,
    scrapeMs,
    scrapeEverySeconds: SCRAPE_EVERY_S,
  });
}

/** The machine-readable summary, printed last (after the optional metrics rounds). */
let finalLine: string | undefined;

await run(async () => {
  await main();
  if (finalLine) console.log(finalLine);
});
