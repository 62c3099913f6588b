/**
 * The telemetry_rollup job at steady state: what folding a live fleet's heartbeats costs, per
 * heartbeat, when the job runs every minute as its schedule says.
 *
 *   npm run bench:rollup -- [--devices 10000] [--minutes 60] [--interval 60] [--more-scripts 0]
 *
 * `--more-scripts N` adds N copies of the built-in scripts' reports under other names (a device with
 * more scripts): past ~2 KB PostgreSQL stores a payload compressed, and every read decompresses it.
 *
 * Stores `--minutes` of heartbeats of `--devices` devices, one every `--interval` seconds each (the
 * agent's built-in scripts' payloads, as the heartbeat stores them; each device at its own offset in
 * the interval), in time order. Within a window every heartbeat's numbers are its own, as a real
 * device's are (one of 100 templates, and the device's number modulo 997 written in front of each of
 * its numbers: unique up to 99,700 devices, and the payload stays under the ~2 KB TOAST threshold as
 * the agent's does). With the templates alone PostgreSQL's Memoize reused its parse of each script's
 * output, and the fold cost about half of what it does on real telemetry. Then runs the job's fold
 * (modules/telemetry/rollups.ts) once per minute of virtual time over them, as its cron would, and
 * prints the totals: heartbeats folded, the fold's wall time, PostgreSQL's CPU (every process of its
 * own cluster) and the job process's own CPU per heartbeat, the longest stall of the job process's
 * event loop, the WAL it wrote per heartbeat, and the rollup rows it inserted and updated.
 */
import postgres from "postgres";
import { rollUpTelemetry } from "../../modules/telemetry/rollups";
import { ensureTelemetryPartitions } from "../../modules/telemetry/service";
import { heartbeatBody, storedPayload } from "../heartbeat/body";
import { startMigratedBenchDatabase } from "../heartbeat/database";
import { knob as flagKnob } from "../heartbeat/flags";
import { cpuSeconds } from "../heartbeat/probes";
import { benchLifecycle } from "../lifecycle";

if (process.argv.includes("--help")) {
  console.log(
    "usage: npm run bench:rollup -- [--devices N] [--minutes N] [--interval SECONDS] [--more-scripts N]",
  );
  process.exit(0);
}
const knob = (flag: string, env: string, fallback: number) => flagKnob("bench:rollup", flag, env, fallback);
const DEVICES = Math.max(100, knob("devices", "BENCH_DEVICES", 10_000));
const MINUTES = Math.max(10, Math.min(600, knob("minutes", "BENCH_MINUTES", 60)));
const INTERVAL_S = Math.max(1, knob("interval", "BENCH_INTERVAL", 60));
/** Copies of the built-in scripts' reports added under other names: payloads past the ~2 KB TOAST threshold. */
const MORE_SCRIPTS = Math.max(0, Math.min(20, knob("more-scripts", "BENCH_MORE_SCRIPTS", 0)));
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const { cleanups, run } = benchLifecycle(60 * 60_000);

/** Inserted and updated rows of the rollup tables (partitions included), as PostgreSQL counts them. */
async function rollupWrites(stats: postgres.Sql) {
  await stats`select pg_stat_clear_snapshot()`;
  const [row] = await stats<{ inserted: number; updated: number }[]>`
    select coalesce(sum(n_tup_ins), 0)::float8 as inserted, coalesce(sum(n_tup_upd), 0)::float8 as updated
    from pg_stat_user_tables where relname ~ '^telemetry_(hourly|6min|fleet_hourly)'`;
  return row!;
}

/**
 * How long the event loop stalls while the job runs: in the `all` role the job shares its process
 * with the web server, whose requests wait behind any stretch of synchronous work. A 5 ms timer's
 * lateness, from the call until stop().
 */
function eventLoopStalls() {
  const PERIOD_MS = 5;
  let last = performance.now();
  let longest = 0;
  let over20 = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    const stall = now - last - PERIOD_MS;
    if (stall > longest) longest = stall;
    if (stall > 20) over20++;
    last = now;
  }, PERIOD_MS);
  return {
    stop: () => {
      clearInterval(timer);
      return { longestMs: Math.round(longest * 10) / 10, over20 };
    },
  };
}

async function main() {
  const { url, postgresPid, sql } = await startMigratedBenchDatabase("bench:rollup", 2, cleanups);
  const stats = postgres(url, { max: 1, onnotice: () => {} });
  cleanups.push(() => stats.end({ timeout: 5 }));
  await ensureTelemetryPartitions(sql, 1);

  // Heartbeats from a whole hour three hours ago on, so the virtual clock never passes the real one.
  const start = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - 3 * HOUR_MS;
  const payloads = Array.from({ length: 100 }, (_, i) => {
    const body = heartbeatBody("AA:BB:CC:00:00:01", 3600 + i * 30);
    const scripts: Record<string, unknown> = body.telemetry.scripts;
    for (let copy = 1; copy <= MORE_SCRIPTS; copy++)
      for (const [name, report] of Object.entries(body.telemetry.scripts))
        scripts[`${name}_${copy}`] = report;
    return storedPayload(body);
  });
  const perDevice = Math.floor((MINUTES * 60) / INTERVAL_S);
  console.log(
    `rollup at steady state: ${DEVICES.toLocaleString("en-US")} devices, a heartbeat every ${INTERVAL_S} s, ${MINUTES} minutes (${(DEVICES * perDevice).toLocaleString("en-US")} heartbeats)`,
  );
  const seeded = performance.now();
  await sql`
    insert into telemetry_events (id, device_id, recorded_at, payload)
    select gen_random_uuid(), d.id, h.at,
      regexp_replace((${payloads}::text[])[1 + (d.n + h.k) % 100], ':([0-9])', ':' || (d.n % 997 + 1)::text || '\\1', 'g')::json
    from (select n, gen_random_uuid() as id from generate_series(0, ${DEVICES - 1}) as n) d
    cross join lateral (
      select k, ${new Date(start).toISOString()}::timestamptz
        + make_interval(secs => k * ${INTERVAL_S} + (d.n * ${INTERVAL_S}::float8 / ${DEVICES})) as at
      from generate_series(0, ${perDevice - 1}) as k
    ) h
    order by h.at`;
  const [{ bytes }] = await sql<{ bytes: number }[]>`
    select avg(length(payload::text))::float8 as bytes from telemetry_events`;
  await sql`vacuum analyze telemetry_events`;
  await sql`checkpoint`;
  console.log(
    `  seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s (payloads ${Math.round(bytes).toLocaleString("en-US")} B on average)`,
  );

  // The job's first run finds its watermark (the oldest partition) and crosses the empty hours to `start`.
  await rollUpTelemetry(sql, { now: new Date(start), budgetMs: 600_000 });
  const before = await rollupWrites(stats);
  const [{ lsn: walBefore }] = await stats<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
  const cpuBefore = cpuSeconds(postgresPid, true);
  const jobCpuBefore = process.cpuUsage();
  let heartbeats = 0;
  let foldMs = 0;
  let runs = 0;
  const stalls = eventLoopStalls();
  // One run per virtual minute, past the last heartbeat until the job has folded them all.
  for (let minute = 1; minute <= MINUTES + 8; minute++) {
    const began = performance.now();
    const step = await rollUpTelemetry(sql, { now: new Date(start + minute * MINUTE_MS), budgetMs: 600_000 });
    foldMs += performance.now() - began;
    heartbeats += step.heartbeats;
    runs++;
  }
  const stalled = stalls.stop();
  const cpu = cpuSeconds(postgresPid, true) - cpuBefore;
  const { user, system } = process.cpuUsage(jobCpuBefore);
  const jobCpu = (user + system) / 1e6;
  const [{ bytes: wal }] = await stats<{ bytes: number }[]>`
    select pg_wal_lsn_diff(pg_current_wal_lsn(), ${walBefore}::pg_lsn)::float8 as bytes`;
  await new Promise((resolve) => setTimeout(resolve, 1500)); // the job's backend reports its counts
  const after = await rollupWrites(stats);
  const per = (value: number) => (heartbeats ? value / heartbeats : 0);
  console.log(`  ${runs} runs folded ${heartbeats.toLocaleString("en-US")} heartbeats`);
  console.log(
    `  fold wall time ${(foldMs / 1000).toFixed(1)} s: ${(per(foldMs) * 1000).toFixed(1)} µs per heartbeat`,
  );
  console.log(`  PostgreSQL CPU ${cpu.toFixed(1)} s: ${(per(cpu) * 1e6).toFixed(1)} µs per heartbeat`);
  console.log(
    `  the job's own CPU ${jobCpu.toFixed(1)} s: ${(per(jobCpu) * 1e6).toFixed(1)} µs per heartbeat`,
  );
  console.log(
    `  event loop: longest stall ${stalled.longestMs} ms, ${stalled.over20} stalls over 20 ms (what requests in the same process wait)`,
  );
  console.log(`  WAL ${(wal / 1048576).toFixed(1)} MiB: ${per(wal).toFixed(0)} B per heartbeat`);
  console.log(
    `  rollup rows inserted ${(after.inserted - before.inserted).toLocaleString("en-US")}, updated ${(after.updated - before.updated).toLocaleString("en-US")}`,
  );
  console.log(
    JSON.stringify({
      bench: "rollup",
      devices: DEVICES,
      interval_s: INTERVAL_S,
      minutes: MINUTES,
      more_scripts: MORE_SCRIPTS,
      payload_bytes: Math.round(bytes),
      heartbeats,
      fold_us_per_heartbeat: Math.round(per(foldMs) * 10_000) / 10,
      postgres_cpu_us_per_heartbeat: Math.round(per(cpu) * 1e7) / 10,
      job_cpu_us_per_heartbeat: Math.round(per(jobCpu) * 1e7) / 10,
      event_loop_longest_stall_ms: stalled.longestMs,
      event_loop_stalls_over_20ms: stalled.over20,
      wal_bytes_per_heartbeat: Math.round(per(wal)),
      rollup_rows_inserted: after.inserted - before.inserted,
      rollup_rows_updated: after.updated - before.updated,
    }),
  );
}

await run(main);
