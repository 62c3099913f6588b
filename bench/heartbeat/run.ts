import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { heartbeatBodyText } from "./body";
import { measureCeilings } from "./ceilings";
import { KeepAliveConnection } from "./http-client";
import { type Phase, reportMetricsRounds } from "./metrics-rounds";
import { cpuSeconds, databaseCounters, percentile, statements } from "./probes";
import { seedFleet } from "./seed";
import { startBenchServer } from "./server";

/** `--name value` on the command line, else the environment variable, else the default. */
function knob(flag: string, env: string, fallback: number): number {
  const i = process.argv.indexOf(`--${flag}`);
  const raw = i >= 0 ? process.argv[i + 1] : process.env[env];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`bench:heartbeat: --${flag} (${env}) must be a number ≥ 0, not ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}
if (process.argv.includes("--help")) {
  console.log(`npm run bench:heartbeat -- [--devices 200000] [--telemetry-rows 10000000] [--concurrency 64]
  [--duration 10] [--warmup 2] [--metrics-rounds 0] [--in-registration-order]
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
const METRICS_TOKEN = "bench-metrics-token-0123456789";
const HARD_LIMIT_MS =
  (DURATION_S * 3 +
    WARMUP_S * 2 +
    METRICS_ROUNDS * 2 * (METRICS_PHASE_S + WARMUP_S) +
    240 +
    DEVICES / 5000 +
    // Seeding ran at 21,000 rows/s on a busy 2-core machine (10 M rows: 475 s).
    TELEMETRY_ROWS / 10_000) *
  1000;

const cleanups: (() => Promise<void> | void)[] = [];
async function cleanup() {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => {});
}
const guard = setTimeout(async () => {
  console.error(`benchmark exceeded ${HARD_LIMIT_MS / 1000}s; stopping`);
  await cleanup();
  process.exit(2);
}, HARD_LIMIT_MS);

async function main() {
  console.log(
    `heartbeat benchmark: ${DEVICES} devices${IN_REGISTRATION_ORDER ? " in registration order" : ""}, ${CONCURRENCY} concurrent, ${DURATION_S}s (+${WARMUP_S}s warm-up), PostgreSQL ${EPHEMERAL ? "without fsync" : "durable (fsync on)"}`,
  );

  // 1. PostgreSQL with pg_stat_statements.
  let adminUrl = process.env.BENCH_DATABASE_URL;
  let postgresPid: number | undefined;
  if (!adminUrl) {
    const directory = mkdtempSync(path.join(tmpdir(), "outpost-bench-pg-"));
    let cluster = await startEmbeddedPostgres({ directory, ephemeral: EPHEMERAL });
    const setup = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await setup.unsafe("alter system set shared_preload_libraries = 'pg_stat_statements'");
    await setup.unsafe("alter system set max_connections = 200");
    await setup.end();
    await cluster.stop();
    cluster = await startEmbeddedPostgres({ directory, ephemeral: EPHEMERAL });
    const started = cluster;
    postgresPid = cluster.pid;
    cleanups.push(async () => {
      await started.stop();
      for (const suffix of ["", ".password", ".log", ".owner"])
        rmSync(`${directory}${suffix}`, { recursive: true, force: true });
    });
    adminUrl = cluster.url;
  }
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const dbName = `outpost_bench_${Date.now()}`;
  await admin.unsafe(`create database ${dbName}`);
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${dbName}`;
  cleanups.push(async () => {
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  });

  // 2. Outpost in its own processes (web role: HTTP only): one serving metrics (METRICS_TOKEN, scraped
  // every second while it is loaded) and one without, against the same database.
  const startServer = (extraEnv: Record<string, string>) =>
    startBenchServer({ databaseUrl: dbUrl.toString(), extraEnv, cleanups });
  // METRICS_CONTROL=1: both servers without metrics (an A/A run: what differs between two servers).
  const control = process.env.METRICS_CONTROL === "1";
  const { child: server, url: base } = await startServer(control ? {} : { METRICS_TOKEN: METRICS_TOKEN });
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
          headers: { authorization: `Bearer ${METRICS_TOKEN}` },
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
  const db = postgres(dbUrl.toString(), { max: SERVER_POOL, onnotice: () => {} });
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

  // 4. Load: CONCURRENCY loops, each posting heartbeats of the next device in turn.
  let next = 0;
  let measuring = false;
  let stop = false;
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  let errors = 0;
  /** One simulated caller: heartbeats of the next device in turn to `target` until `done()`, on one
   * keep-alive connection (a new one after a network error). */
  const heartbeatLoop = async (
    target: string,
    done: () => boolean,
    record: (status: number | undefined, ms: number) => void,
  ) => {
    let connection: KeepAliveConnection | undefined;
    while (!done()) {
      const device = devices[next++ % devices.length]!;
      const body = bodyText(device.mac, next);
      const started = performance.now();
      try {
        connection ??= await KeepAliveConnection.open(target);
        const answer = await connection.post(
          `/api/v1/devices/${device.id}/heartbeat?api_key=${device.token}`,
          body,
        );
        record(answer.status, performance.now() - started);
      } catch {
        connection = undefined;
        record(undefined, 0);
      }
    }
    connection?.close();
  };
  const worker = () =>
    heartbeatLoop(
      base,
      () => stop,
      (status, ms) => {
        if (!measuring) return;
        if (status === undefined) errors++;
        else {
          latencies.push(ms);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      },
    );
  const workers = Array.from({ length: CONCURRENCY }, worker);
  await Bun.sleep(WARMUP_S * 1000);
  const statsBefore = await statements(db);
  const countersBefore = await databaseCounters(db);
  const cpuBefore = {
    server: cpuSeconds(server.pid!),
    client: process.cpuUsage(),
    postgres: postgresPid ? cpuSeconds(postgresPid, true) : Number.NaN,
  };
  measuring = true;
  const startedAt = performance.now();
  await Bun.sleep(DURATION_S * 1000);
  measuring = false;
  const elapsed = (performance.now() - startedAt) / 1000;
  const clientCpu = process.cpuUsage(cpuBefore.client);
  const cpu = {
    server: cpuSeconds(server.pid!) - cpuBefore.server,
    client: (clientCpu.user + clientCpu.system) / 1e6,
    postgres: postgresPid ? cpuSeconds(postgresPid, true) - cpuBefore.postgres : Number.NaN,
  };
  const countersAfter = await databaseCounters(db);
  const statsAfter = await statements(db);
  stop = true;
  await Promise.all(workers);

  const ok = statuses.get(200) ?? 0;
  latencies.sort((a, b) => a - b);
  const rate = ok / elapsed;
  const perStatement: { query: string; calls: number }[] = [];
  let calls = 0;
  for (const [query, after] of statsAfter) {
    if (/pg_stat|pg_database|pg_catalog/.test(query)) continue;
    const delta = after.calls - (statsBefore.get(query)?.calls ?? 0);
    if (delta > 0) {
      calls += delta;
      perStatement.push({ query: query.replace(/\s+/g, " ").slice(0, 90), calls: delta });
    }
  }
  perStatement.sort((a, b) => b.calls - a.calls);
  const heartbeats = latencies.length;

  // 5. The ceilings: the same telemetry rows straight into PostgreSQL, same pool size.
  const { BATCH_ROWS, ceilingRate, durableCeilingRate, batchCeilingRate } = await measureCeilings({
    databaseUrl: dbUrl.toString(),
    devices,
    pool: SERVER_POOL,
    callers: CONCURRENCY,
    durationS: DURATION_S,
  });

  const fmt = (n: number, digits = 1) => n.toFixed(digits);
  console.log("");
  console.log(
    `  heartbeats:       ${heartbeats} in ${fmt(elapsed)}s (status ${JSON.stringify(Object.fromEntries(statuses))}, network errors ${errors})`,
  );
  console.log(`  throughput:       ${fmt(rate, 0)} heartbeats/s`);
  console.log(
    `  latency:          p50 ${fmt(percentile(latencies, 50))} ms, p90 ${fmt(percentile(latencies, 90))} ms, p99 ${fmt(percentile(latencies, 99))} ms, max ${fmt(latencies[latencies.length - 1] ?? Number.NaN)} ms`,
  );
  console.log(
    `  ceiling:          ${fmt(ceilingRate, 0)} raw telemetry inserts/s (same rows and commit mode, ${SERVER_POOL} connections, ${CONCURRENCY} callers)`,
  );
  console.log(`                    ${fmt(durableCeilingRate, 0)} raw inserts/s with every commit durable`);
  console.log(
    `  ratio:            ${fmt((100 * rate) / ceilingRate)}% of the ceiling (${fmt((100 * rate) / durableCeilingRate)}% of the durable one)`,
  );
  console.log(
    `  per heartbeat:    ${fmt(calls / heartbeats, 2)} SQL statements (pg_stat_statements), ${fmt((countersAfter.xact - countersBefore.xact) / heartbeats, 2)} transactions`,
  );
  console.log(
    `                    ${fmt((countersAfter.ins - countersBefore.ins) / heartbeats, 2)} rows inserted, ${fmt((countersAfter.upd - countersBefore.upd) / heartbeats, 2)} rows updated (${fmt((countersAfter.hot - countersBefore.hot) / heartbeats, 2)} HOT)`,
  );
  console.log(
    `                    devices: ${fmt((100 * (countersAfter.deviceHot - countersBefore.deviceHot)) / (countersAfter.deviceUpd - countersBefore.deviceUpd))}% of row updates HOT`,
  );
  const ms = (seconds: number) => fmt((1000 * seconds) / heartbeats, 3);
  console.log(
    `  CPU per heartbeat: server ${ms(cpu.server)} ms, PostgreSQL ${ms(cpu.postgres)} ms, load generator ${ms(cpu.client)} ms (machine: ${navigator.hardwareConcurrency} cores, load average ${loadavg()[0].toFixed(1)})`,
  );
  for (const s of perStatement.slice(0, 5)) console.log(`    ${String(s.calls).padStart(8)}  ${s.query}`);
  console.log(
    `                    ${fmt(batchCeilingRate, 0)} rows/s as multi-row INSERTs of ${BATCH_ROWS} (the API reaches ${fmt((100 * rate) / batchCeilingRate)}% of it)`,
  );
  const answered = heartbeats + errors;
  const notOk = answered - ok;
  const refusedShare = answered === 0 ? 1 : notOk / answered;
  console.log(
    `  not 200:          ${notOk} of ${answered} (${fmt(100 * refusedShare, 3)}%; 429s ${statuses.get(429) ?? 0}, network errors ${errors}); at most ${MAX_NON_200 * 100}% allowed`,
  );
  const pass = rate >= 10_000 && percentile(latencies, 99) < 100;
  console.log(
    `  target (≥ 10,000/s, p99 < 100 ms at ${CONCURRENCY} concurrent): ${pass ? "met" : "NOT met"}`,
  );
  const summary = {
    bench: "heartbeat",
    devices: DEVICES,
    order: IN_REGISTRATION_ORDER ? "registration" : "shuffled",
    device_updates_hot_percent: +(
      (100 * (countersAfter.deviceHot - countersBefore.deviceHot)) /
      (countersAfter.deviceUpd - countersBefore.deviceUpd)
    ).toFixed(1),
    telemetry_rows_before: TELEMETRY_ROWS,
    concurrency: CONCURRENCY,
    duration_s: DURATION_S,
    rate: Math.round(rate),
    p50_ms: +percentile(latencies, 50).toFixed(2),
    p95_ms: +percentile(latencies, 95).toFixed(2),
    p99_ms: +percentile(latencies, 99).toFixed(2),
    not_200: notOk,
    status_429: statuses.get(429) ?? 0,
    network_errors: errors,
    cpu_ms_per_heartbeat: {
      server: +((1000 * cpu.server) / heartbeats).toFixed(3),
      postgres: +((1000 * cpu.postgres) / heartbeats).toFixed(3),
      load_generator: +((1000 * cpu.client) / heartbeats).toFixed(3),
    },
    ceiling_single_row: Math.round(ceilingRate),
    ceiling_single_row_durable: Math.round(durableCeilingRate),
    ceiling_multi_row: Math.round(batchCeilingRate),
    load_average: +loadavg()[0].toFixed(2),
  };
  if (refusedShare > MAX_NON_200) {
    console.log(`  FAILED: ${fmt(100 * refusedShare, 3)}% of answers were not 200 (the rate would flatter)`);
    process.exitCode = 1;
  }
  finalLine = JSON.stringify(summary);

  // 6. Metrics on vs off: alternated rounds (off-on, on-off, …) against the two servers, the metrics
  // one scraped every second. Off = no METRICS_TOKEN/METRICS_PORT: requests are not timed.
  if (!withoutMetrics) return;
  const phases: Phase[] = [];
  /** Load against one server: WARMUP_S unmeasured, then `seconds` measured. */
  const phase = async (metrics: boolean, seconds: number) => {
    const phaseLatencies: number[] = [];
    let refused = 0;
    let phaseMeasuring = false;
    let phaseStop = false;
    scraping = metrics;
    const loops = Array.from({ length: CONCURRENCY }, () =>
      heartbeatLoop(
        metrics ? base : withoutMetrics.url,
        () => phaseStop,
        (status, ms) => {
          if (!phaseMeasuring) return;
          if (status === 200) phaseLatencies.push(ms);
          else refused++;
        },
      ),
    );
    await Bun.sleep(WARMUP_S * 1000);
    // CPU seconds spent per heartbeat hold up better than throughput on a busy machine.
    const serverPid = (metrics ? server : withoutMetrics.child).pid!;
    const cpu0 = {
      server: cpuSeconds(serverPid),
      pg: postgresPid ? cpuSeconds(postgresPid, true) : Number.NaN,
    };
    phaseMeasuring = true;
    const phaseStart = performance.now();
    await Bun.sleep(seconds * 1000);
    phaseMeasuring = false;
    const elapsedPhase = (performance.now() - phaseStart) / 1000;
    const served = phaseLatencies.length;
    const serverCpu = (1000 * (cpuSeconds(serverPid) - cpu0.server)) / served;
    const pgCpu = postgresPid ? (1000 * (cpuSeconds(postgresPid, true) - cpu0.pg)) / served : Number.NaN;
    phaseStop = true;
    await Promise.all(loops);
    scraping = false;
    phaseLatencies.sort((a, b) => a - b);
    return {
      metrics,
      rate: served / elapsedPhase,
      p99: percentile(phaseLatencies, 99),
      refused,
      serverCpu,
      pgCpu,
    } satisfies Phase;
  };
  // The server without metrics has served nothing yet: warm it (JIT, connections) as the other was.
  await phase(false, DURATION_S);
  for (let round = 0; round < METRICS_ROUNDS; round++) {
    for (const metrics of round % 2 === 0 ? [false, true] : [true, false])
      phases.push(await phase(metrics, METRICS_PHASE_S));
  }
  reportMetricsRounds(phases, {
    rounds: METRICS_ROUNDS,
    phaseSeconds: METRICS_PHASE_S,
    scrapeMs,
    scrapeEverySeconds: SCRAPE_EVERY_S,
  });
}

/** Fisher-Yates with a fixed seed (mulberry32): the same order on every run. */
function shuffle<T>(items: T[]) {
  let seed = 0x9e3779b9;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}

/** The machine-readable summary, printed last (after the optional metrics rounds). */
let finalLine: string | undefined;

try {
  await main();
  if (finalLine) console.log(finalLine);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanup();
  clearTimeout(guard);
}
