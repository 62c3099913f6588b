// Over 400 lines on purpose: one run's phases in the order they happen (seed, load, ceilings, metrics
// rounds). The heartbeat posted is in ./body.ts, what is read off the machine in ./probes.ts.
/**
 * Heartbeat benchmark.
 *
 *   node_modules/.bin/bun bench/heartbeat/run.ts
 *
 * Starts a PostgreSQL of its own (or uses BENCH_DATABASE_URL) with pg_stat_statements, runs
 * Outpost (web role) as a separate process on loopback, registers and approves DEVICES devices,
 * then CONCURRENCY simulated devices post realistic heartbeats (5 scripts, ~2 KB) for DURATION
 * seconds after a warm-up. Prints heartbeats/s, latency percentiles, the statements and rows each
 * heartbeat cost, and — in the same run — the ceiling: the rate of inserting the same telemetry rows
 * straight into PostgreSQL with the same pool size. Everything it starts, it stops (bounded in time).
 *
 * Knobs (flag or environment): --devices DEVICES (200,000, seeded with generate_series, not through the
 * API), --telemetry-rows TELEMETRY_ROWS (10,000,000 already present), --concurrency CONCURRENCY (64),
 * --duration DURATION seconds (10), --warmup WARMUP seconds (2), --metrics-rounds METRICS_ROUNDS.
 * The run fails (exit 1) when more than 0.1 % of answers are not 200. The last line is one JSON object.
 * Also:
 * BENCH_EPHEMERAL=1 to run PostgreSQL without fsync (default: durable, like production),
 * BENCH_WITHOUT_LIVE_TRIGGER=1 to disable the devices live-update trigger (to measure its cost),
 * METRICS_ROUNDS (4) and METRICS_PHASE seconds (5): after the main measurement, rounds of the same
 * load against a second server without metrics and the first one (METRICS_TOKEN set, /metrics
 * scraped every METRICS_SCRAPE_EVERY seconds, default 1, 0 = never), alternated, to print the
 * throughput kept with metrics on (0 rounds: skip). METRICS_CONTROL=1 starts both without metrics
 * (an A/A run: how much two servers differ when nothing does).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { heartbeatBody } from "./body";
import { cpuSeconds, databaseCounters, freePort, percentile, statements } from "./probes";

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
  [--duration 10] [--warmup 2] [--metrics-rounds 0]   (or the environment variables in the file's header)`);
  process.exit(0);
}
/** Registered devices, written straight into the table; the load visits them in turn, so at the
 * measured rate no device comes near its 30 heartbeats a minute (no cheap 429s in the figure). */
const DEVICES = knob("devices", "DEVICES", 200_000);
/** Telemetry rows already present (spread over the last 2 days), so indexes have a real fleet's size. */
const TELEMETRY_ROWS = knob("telemetry-rows", "TELEMETRY_ROWS", 10_000_000);
const CONCURRENCY = knob("concurrency", "CONCURRENCY", 64);
const DURATION_S = knob("duration", "DURATION", 10);
const WARMUP_S = knob("warmup", "WARMUP", 2);
/** More than this share of answers that are not 200 makes the run fail (its rate would flatter). */
const MAX_NON_200 = 0.001;
const EPHEMERAL = process.env.BENCH_EPHEMERAL === "1";
const SERVER_POOL = 10; // connectDatabase's default pool size, used by the server
const ROOT = path.resolve(import.meta.dir, "../..");
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
    TELEMETRY_ROWS / 40_000) *
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
    `heartbeat benchmark: ${DEVICES} devices, ${CONCURRENCY} concurrent, ${DURATION_S}s (+${WARMUP_S}s warm-up), PostgreSQL ${EPHEMERAL ? "without fsync" : "durable (fsync on)"}`,
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
  const startServer = async (extraEnv: Record<string, string>) => {
    const port = await freePort();
    const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-bench-data-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    // BENCH_SERVER_PROFILE=<dir>: the server writes a CPU profile (markdown) there when it stops.
    const profile = process.env.BENCH_SERVER_PROFILE
      ? ["--cpu-prof-md", `--cpu-prof-dir=${process.env.BENCH_SERVER_PROFILE}`]
      : [];
    const child: ChildProcess = spawn(
      path.join(ROOT, "node_modules/.bin/bun"),
      [...profile, path.join(ROOT, "cli/main.ts"), "start"],
      {
        env: {
          ...process.env,
          DATABASE_URL: dbUrl.toString(),
          DATA_DIR: dataDir,
          PORT: String(port),
          HOST: "127.0.0.1",
          OUTPOST_ROLE: "web",
          // Every simulated device registers (twice) from this one address.
          DEVICE_REGISTER_RATE_LIMIT: "1000000",
          // The comparison rounds add heartbeats per device and minute: never refuse them for that.
          DEVICE_HEARTBEAT_RATE_LIMIT: "1000000",
          LOG_LEVEL: "warn",
          SECRET_KEY: "bench-secret-key-bench-secret-key-0123456789",
          NODE_ENV: "production",
          ...extraEnv,
        },
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    cleanups.push(async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await new Promise((resolve) => {
          const timer = setTimeout(() => {
            child.kill("SIGKILL");
            resolve(undefined);
          }, 15_000);
          child.once("exit", () => {
            clearTimeout(timer);
            resolve(undefined);
          });
        });
      }
    });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      const ready = await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      if (i > 600 || child.exitCode !== null) throw new Error("Outpost did not become ready");
      await Bun.sleep(100);
    }
    return { child, url };
  };
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
  const macs = Array.from({ length: DEVICES }, (_, i) =>
    (0x02_00_00_00_00_00 + i).toString(16).padStart(12, "0").toUpperCase().match(/../g)!.join(":"),
  );
  // Devices straight into the table (approved, a known token each: bench-token-<n>, seen in the last
  // 30 s like a polling fleet, not for the first time: that would run the live trigger's function), then the
  // telemetry already there, both with generate_series: the API would take hours for a real fleet.
  let seedStarted = performance.now();
  for (let from = 0; from < DEVICES; from += 50_000) {
    const to = Math.min(DEVICES, from + 50_000) - 1;
    await db`
      insert into devices (mac_address, product_name, approval_status, api_token_hash, token_issued_at, last_seen_at)
      select upper(regexp_replace(lpad(to_hex(${0x02_00_00_00_00_00} + i), 12, '0'), '(..)(?!$)', '\\1:', 'g')),
        'atom', 'approved', encode(sha256(convert_to('bench-token-' || i, 'UTF8')), 'hex'), now(),
        now() - make_interval(secs => i % 30)
      from generate_series(${from}::bigint, ${to}::bigint) i`;
  }
  const seeded = await db<{ id: string; mac_address: string }[]>`select id, mac_address from devices`;
  const byMac = new Map(seeded.map((d) => [d.mac_address, d.id]));
  const devices = macs.map((mac, i) => ({ id: byMac.get(mac)!, token: `bench-token-${i}`, mac }));
  if (devices.some((d) => !d.id)) throw new Error("a seeded device is missing");
  console.log(`  ${DEVICES} devices seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
  if (TELEMETRY_ROWS > 0) {
    seedStarted = performance.now();
    await db`select telemetry_ensure_partitions((now() - interval '3 days')::date, (now() + interval '1 day')::date)`;
    const perDevice = Math.max(1, Math.ceil(TELEMETRY_ROWS / DEVICES));
    const rows = Math.min(DEVICES, Math.ceil(TELEMETRY_ROWS / perDevice));
    const payload = JSON.stringify({
      ...heartbeatBody(macs[0]!, 1).telemetry,
      connection_status: { active: false },
    });
    for (let offset = 0; offset < rows; offset += 10_000) {
      await db`
        insert into telemetry_events (id, device_id, recorded_at, payload)
        select uuidv7(t - now()), d.id, t, ${payload}::json
        from (select id, row_number() over (order by id) as rank from devices order by id offset ${offset} limit ${Math.min(10_000, rows - offset)}) d
        cross join lateral (
          select now() - interval '10 seconds' - make_interval(secs => (172800.0 / ${perDevice}) * k + (d.rank % 97)) as t
          from generate_series(0, ${perDevice - 1}) k) g`;
    }
    await db`analyze telemetry_events`;
    await db`analyze devices`;
    const [{ n }] = await db<{ n: number }[]>`select count(*)::int as n from telemetry_events`;
    console.log(`  ${n} telemetry rows seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
  }
  const sampleSize = JSON.stringify(heartbeatBody(macs[0]!, 1)).length;
  console.log(`  heartbeat body ${sampleSize} bytes`);

  // 4. Load: CONCURRENCY loops, each posting heartbeats of the next device in turn.
  let next = 0;
  let measuring = false;
  let stop = false;
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  let errors = 0;
  /** One simulated caller: heartbeats of the next device in turn to `target` until `done()`. */
  const heartbeatLoop = async (
    target: string,
    done: () => boolean,
    record: (status: number | undefined, ms: number) => void,
  ) => {
    while (!done()) {
      const device = devices[next++ % devices.length]!;
      const body = JSON.stringify(heartbeatBody(device.mac, next));
      const started = performance.now();
      try {
        const response = await fetch(
          `${target}/api/v1/devices/${device.id}/heartbeat?api_key=${device.token}`,
          {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          },
        );
        await response.arrayBuffer();
        record(response.status, performance.now() - started);
      } catch {
        record(undefined, 0);
      }
    }
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

  // 5. The ceiling: the same telemetry rows inserted straight into PostgreSQL, same pool size.
  const ceilingSql = postgres(dbUrl.toString(), { max: SERVER_POOL, onnotice: () => {} });
  cleanups.push(() => ceilingSql.end({ timeout: 5 }));
  let inserted = 0;
  let ceilingStop = false;
  let ceilingAsync = true;
  const inserter = async () => {
    while (!ceilingStop) {
      const device = devices[next++ % devices.length]!;
      const body = heartbeatBody(device.mac, next);
      const payload = JSON.stringify({ ...body.telemetry, connection_status: body.connection_status });
      if (ceilingAsync) {
        // The same commit mode as a heartbeat that delivers no command.
        await ceilingSql`insert into telemetry_events (id, device_id, recorded_at, payload)
          select ${Bun.randomUUIDv7()}::uuid, ${device.id}::uuid, now(), ${payload}::json
          from (select set_config('synchronous_commit', 'off', true)) s`;
      } else {
        await ceilingSql`insert into telemetry_events (id, device_id, recorded_at, payload)
          values (${Bun.randomUUIDv7()}::uuid, ${device.id}::uuid, now(), ${payload}::json)`;
      }
      inserted++;
    }
  };
  const measureCeiling = async (asyncCommit: boolean) => {
    ceilingAsync = asyncCommit;
    ceilingStop = false;
    const inserters = Array.from({ length: CONCURRENCY }, inserter);
    await Bun.sleep(1000);
    inserted = 0;
    const ceilingStart = performance.now();
    await Bun.sleep(DURATION_S * 1000);
    const result = inserted / ((performance.now() - ceilingStart) / 1000);
    ceilingStop = true;
    await Promise.all(inserters);
    return result;
  };
  const ceilingRate = await measureCeiling(true);
  const durableCeilingRate = await measureCeiling(false);
  // The second ceiling: the same rows as one multi-row INSERT per batch of BATCH_ROWS (how far the
  // API could go if it batched perfectly), same commit mode as the first.
  const BATCH_ROWS = 100;
  let batchStop = false;
  let batchInserted = 0;
  const batcher = async () => {
    while (!batchStop) {
      const rows = Array.from({ length: BATCH_ROWS }, () => {
        const device = devices[next++ % devices.length]!;
        const body = heartbeatBody(device.mac, next);
        return {
          id: Bun.randomUUIDv7(),
          device_id: device.id,
          payload: JSON.stringify({ ...body.telemetry, connection_status: body.connection_status }),
        };
      });
      await ceilingSql.begin(async (tx) => {
        await tx`select set_config('synchronous_commit', 'off', true)`;
        await tx`insert into telemetry_events (id, device_id, recorded_at, payload)
          select u.id, u.device_id, now(), u.payload::json
          from unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.device_id)}::uuid[],
            ${rows.map((r) => r.payload)}::text[]) as u(id, device_id, payload)`;
      });
      batchInserted += BATCH_ROWS;
    }
  };
  const batchers = Array.from({ length: Math.min(CONCURRENCY, SERVER_POOL) }, batcher);
  await Bun.sleep(1000);
  batchInserted = 0;
  const batchStart = performance.now();
  await Bun.sleep(DURATION_S * 1000);
  const batchCeilingRate = batchInserted / ((performance.now() - batchStart) / 1000);
  batchStop = true;
  await Promise.all(batchers);

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
  type Phase = {
    metrics: boolean;
    rate: number;
    p99: number;
    refused: number;
    serverCpu: number;
    pgCpu: number;
  };
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
  const mean = (metrics: boolean) => {
    const chosen = phases.filter((p) => p.metrics === metrics);
    return chosen.reduce((sum, p) => sum + p.rate, 0) / chosen.length;
  };
  // Each round's own ratio (its two sides ran back to back, under the same background load).
  const ratios = Array.from({ length: METRICS_ROUNDS }, (_, round) => {
    const [a, b] = phases.slice(round * 2, round * 2 + 2) as [Phase, Phase];
    return (100 * (a.metrics ? a.rate : b.rate)) / (a.metrics ? b.rate : a.rate);
  }).sort((x, y) => x - y);
  const median =
    ratios[Math.floor((ratios.length - 1) / 2)]! / 2 + ratios[Math.ceil((ratios.length - 1) / 2)]! / 2;
  console.log("");
  console.log(
    `  metrics on vs off (${METRICS_ROUNDS} rounds of ${METRICS_PHASE_S}s a side, alternated; ${scrapeMs.length} scrapes of /metrics, every ${SCRAPE_EVERY_S}s, median ${fmt(
      percentile(
        [...scrapeMs].sort((a, b) => a - b),
        50,
      ),
    )} ms):`,
  );
  for (const p of phases)
    console.log(
      `    metrics ${p.metrics ? "on " : "off"}  ${fmt(p.rate, 0)} heartbeats/s, p99 ${fmt(p.p99)} ms, CPU per heartbeat: server ${fmt(p.serverCpu, 3)} ms, PostgreSQL ${fmt(p.pgCpu, 3)} ms${p.refused ? `, ${p.refused} not 200` : ""}`,
    );
  const ratio = (100 * mean(true)) / mean(false);
  // CPU per heartbeat, weighted by heartbeats served: the cost metrics add to each one.
  const cpuPer = (metrics: boolean, key: "serverCpu" | "pgCpu") => {
    const chosen = phases.filter((p) => p.metrics === metrics);
    const beats = chosen.reduce((sum, p) => sum + p.rate, 0);
    return chosen.reduce((sum, p) => sum + p[key] * p.rate, 0) / beats;
  };
  const cpuOff = cpuPer(false, "serverCpu") + cpuPer(false, "pgCpu");
  const cpuOn = cpuPer(true, "serverCpu") + cpuPer(true, "pgCpu");
  console.log(
    `    CPU per heartbeat (server + PostgreSQL): off ${fmt(cpuPer(false, "serverCpu"), 3)} + ${fmt(cpuPer(false, "pgCpu"), 3)} ms, on ${fmt(cpuPer(true, "serverCpu"), 3)} + ${fmt(cpuPer(true, "pgCpu"), 3)} ms: a CPU-bound server keeps ${fmt((100 * cpuOff) / cpuOn)}% of its throughput with metrics on`,
  );
  console.log(
    `    per round (on/off): ${ratios.map((r) => `${fmt(r)}%`).join(", ")}; median ${fmt(median)}%`,
  );
  console.log(
    `    mean: off ${fmt(mean(false), 0)}/s, on ${fmt(mean(true), 0)}/s: ${fmt(ratio)}% of the throughput kept with metrics on (target ≥ 97%: ${ratio >= 97 ? "met" : "NOT met"}; load average ${loadavg()[0].toFixed(1)})`,
  );
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
