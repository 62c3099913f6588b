/**
 * A fleet's steady state: heartbeats at a fixed rate for minutes, across several checkpoints, reported
 * in windows. bench:heartbeat measures the best rate right after a checkpoint (every page's first
 * change logs a full-page image: the worst case); this measures what a fleet polling at its interval
 * pays on average, checkpoints and their full-page images included.
 *
 *   npm run bench:heartbeat-steady -- [--devices 100000] [--telemetry-rows 10000000] [--rate D/60]
 *     [--duration 300] [--window 30] [--checkpoint-timeout 60] [--concurrency 64] [--warmup 10]
 *
 * The default rate is the fleet polling every 60 s. `--checkpoint-timeout` stands in for the spacing
 * `max_wal_size = 4GB` gives at 10,000 heartbeats/s (~1–2 minutes): at this machine's rates the WAL
 * would take far longer to fill it, so checkpoints would be rarer than a real fleet's. The last line is
 * one JSON object.
 */
import postgres from "postgres";
import { benchLifecycle } from "../lifecycle";
import { heartbeatBodyText } from "./body";
import { startBenchDatabase } from "./database";
import { knob as flagKnob } from "./flags";
import { FleetLoad, Pacer, shuffle } from "./load";
import {
  cpuSeconds,
  type DatabaseCounters,
  databaseCounters,
  type EventLoopDelays,
  eventLoopDelays,
  type MachineCpu,
  machineCpu,
  machineShares,
  percentile,
  shareLaterThan,
} from "./probes";
import { seedFleet } from "./seed";
import { BENCH_METRICS_TOKEN, startBenchServer } from "./server";

const knob = (flag: string, env: string, fallback: number) =>
  flagKnob("bench:heartbeat-steady", flag, env, fallback);
if (process.argv.includes("--help")) {
  console.log(`npm run bench:heartbeat-steady -- [--devices 100000] [--telemetry-rows 10000000]
  [--rate DEVICES/60] [--duration 300] [--window 30] [--checkpoint-timeout 60] [--concurrency 64] [--warmup 10]`);
  process.exit(0);
}
const DEVICES = knob("devices", "DEVICES", 100_000);
const TELEMETRY_ROWS = knob("telemetry-rows", "TELEMETRY_ROWS", 10_000_000);
// At least one heartbeat a second and one-second windows (0 would never send, or never end).
const RATE = Math.max(1, knob("rate", "RATE", Math.round(DEVICES / 60)));
const DURATION_S = knob("duration", "DURATION", 300);
const WINDOW_S = Math.max(1, knob("window", "WINDOW", 30));
const CHECKPOINT_TIMEOUT_S = Math.max(30, knob("checkpoint-timeout", "CHECKPOINT_TIMEOUT", 60));
const CONCURRENCY = knob("concurrency", "CONCURRENCY", 64);
const WARMUP_S = knob("warmup", "WARMUP", 10);
const MAX_NON_200 = 0.001;
const HARD_LIMIT_MS = (DURATION_S * 2 + WARMUP_S + 300 + DEVICES / 5000 + TELEMETRY_ROWS / 10_000) * 1000;

const { cleanups, run } = benchLifecycle(HARD_LIMIT_MS);

/** What one window (or the whole run) measured. */
interface Span {
  seconds: number;
  latencies: number[];
  statuses: Map<number, number>;
  networkErrors: number;
  cpu: { server: number; postgres: number };
  before: DatabaseCounters;
  after: DatabaseCounters;
  machine: { before: MachineCpu; after: MachineCpu };
  /** The server's event-loop delay histogram (outpost_event_loop_delay_seconds). */
  eventLoop: { before: EventLoopDelays; after: EventLoopDelays };
}

function figures(span: Span) {
  const ok = span.statuses.get(200) ?? 0;
  const answered = span.latencies.length + span.networkErrors;
  const sorted = [...span.latencies].sort((a, b) => a - b);
  const delta = (key: keyof DatabaseCounters) => span.after[key] - span.before[key];
  const per = (n: number) => n / Math.max(1, span.latencies.length);
  return {
    rate: ok / span.seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    notOk: answered - ok,
    answered,
    serverMs: per(1000 * span.cpu.server),
    postgresMs: per(1000 * span.cpu.postgres),
    walKb: per(delta("walBytes") / 1024),
    fpi: per(delta("walFpi")),
    checkpoints: delta("checkpointsDone"),
    checkpointMb: (delta("checkpointBuffers") * 8) / 1024,
    machine: machineShares(span.machine.before, span.machine.after),
    eventLoopLate25: shareLaterThan(span.eventLoop.before, span.eventLoop.after, "0.025"),
    eventLoopLate100: shareLaterThan(span.eventLoop.before, span.eventLoop.after, "0.1"),
  };
}

async function main() {
  console.log(
    `steady heartbeat benchmark: ${DEVICES} devices at ${RATE}/s (each every ${(DEVICES / RATE).toFixed(0)} s), ${DURATION_S} s in ${WINDOW_S} s windows, checkpoint_timeout ${CHECKPOINT_TIMEOUT_S} s, durable`,
  );
  const { url, postgresPid } = await startBenchDatabase({
    ephemeral: false,
    settings: { checkpoint_timeout: `${CHECKPOINT_TIMEOUT_S}s` },
    cleanups,
  });
  if (!postgresPid)
    throw new Error("bench:heartbeat-steady needs its own cluster (unset BENCH_DATABASE_URL)");
  // Serving metrics, for its event loop's delay (a scrape per window).
  const { child: server, url: base } = await startBenchServer({
    databaseUrl: url,
    extraEnv: { METRICS_TOKEN: BENCH_METRICS_TOKEN },
    cleanups,
  });
  const eventLoopNow = () => eventLoopDelays(base, BENCH_METRICS_TOKEN);
  const db = postgres(url, { max: 2, onnotice: () => {} });
  cleanups.push(() => db.end({ timeout: 5 }));
  const { devices, macs } = await seedFleet(db, DEVICES, TELEMETRY_ROWS);
  shuffle(devices);
  const bodyText = heartbeatBodyText();
  console.log(`  heartbeat body ${bodyText(macs[0]!, 1).length} bytes; warming up ${WARMUP_S} s`);

  let window: Span | undefined;
  const whole: Span[] = [];
  let stop = false;
  const callers = new FleetLoad(devices, bodyText).callers(
    CONCURRENCY,
    base,
    () => stop,
    (status, ms) => {
      if (!window) return;
      if (status === undefined) window.networkErrors++;
      else {
        window.latencies.push(ms);
        window.statuses.set(status, (window.statuses.get(status) ?? 0) + 1);
      }
    },
    new Pacer(RATE),
  );
  await Bun.sleep(WARMUP_S * 1000);

  const cpuNow = () => ({ server: cpuSeconds(server.pid!), postgres: cpuSeconds(postgresPid, true) });
  const fmt = (n: number, digits = 1) => n.toFixed(digits);
  for (let elapsed = 0; elapsed < DURATION_S; elapsed += WINDOW_S) {
    const seconds = Math.min(WINDOW_S, DURATION_S - elapsed);
    const cpuBefore = cpuNow();
    const started = performance.now();
    window = {
      seconds,
      latencies: [],
      statuses: new Map(),
      networkErrors: 0,
      cpu: cpuBefore,
      before: await databaseCounters(db),
      after: undefined as unknown as DatabaseCounters,
      machine: { before: machineCpu(), after: undefined as unknown as MachineCpu },
      eventLoop: { before: await eventLoopNow(), after: undefined as unknown as EventLoopDelays },
    };
    await Bun.sleep(seconds * 1000);
    const span = window;
    window = undefined;
    const cpuAfter = cpuNow();
    span.machine.after = machineCpu();
    span.eventLoop.after = await eventLoopNow();
    span.seconds = (performance.now() - started) / 1000;
    span.cpu = {
      server: cpuAfter.server - cpuBefore.server,
      postgres: cpuAfter.postgres - cpuBefore.postgres,
    };
    span.after = await databaseCounters(db);
    whole.push(span);
    const f = figures(span);
    console.log(
      `  ${String(elapsed + seconds).padStart(4)} s  ${fmt(f.rate, 0).padStart(6)}/s  p50 ${fmt(f.p50)} p99 ${fmt(f.p99)} ms  CPU/hb server ${fmt(f.serverMs, 3)} PostgreSQL ${fmt(f.postgresMs, 3)} ms  WAL ${fmt(f.walKb, 2)} KB ${fmt(f.fpi, 3)} FPI/hb  checkpoints ${f.checkpoints} (${fmt(f.checkpointMb)} MB)  machine ${fmt(f.machine.busy, 0)}% busy, ${fmt(f.machine.ioWait, 0)}% I/O wait, ${fmt(f.machine.steal, 0)}% host  event loop late >25 ms ${fmt(f.eventLoopLate25)}%, >100 ms ${fmt(f.eventLoopLate100)}%${f.notOk ? `  not 200: ${f.notOk}` : ""}`,
    );
  }
  stop = true;
  await callers;

  const total = figures({
    seconds: whole.reduce((s, w) => s + w.seconds, 0),
    latencies: whole.flatMap((w) => w.latencies),
    statuses: whole.reduce((all, w) => {
      for (const [status, n] of w.statuses) all.set(status, (all.get(status) ?? 0) + n);
      return all;
    }, new Map<number, number>()),
    networkErrors: whole.reduce((s, w) => s + w.networkErrors, 0),
    cpu: {
      server: whole.reduce((s, w) => s + w.cpu.server, 0),
      postgres: whole.reduce((s, w) => s + w.cpu.postgres, 0),
    },
    before: whole[0]!.before,
    after: whole.at(-1)!.after,
    machine: { before: whole[0]!.machine.before, after: whole.at(-1)!.machine.after },
    eventLoop: { before: whole[0]!.eventLoop.before, after: whole.at(-1)!.eventLoop.after },
  });
  const share = total.answered ? total.notOk / total.answered : 1;
  console.log(
    `\n  whole run: ${fmt(total.rate, 0)} heartbeats/s of ${RATE} offered, p50 ${fmt(total.p50)} ms, p99 ${fmt(total.p99)} ms (from when each was due), not 200: ${total.notOk} of ${total.answered}`,
  );
  console.log(
    `  per heartbeat: server ${fmt(total.serverMs, 3)} ms + PostgreSQL ${fmt(total.postgresMs, 3)} ms CPU, WAL ${fmt(total.walKb, 2)} KB with ${fmt(total.fpi, 3)} full-page images; ${total.checkpoints} checkpoints wrote ${fmt(total.checkpointMb)} MB; the machine ${fmt(total.machine.busy, 0)}% busy, ${fmt(total.machine.ioWait, 0)}% waiting on I/O, ${fmt(total.machine.steal, 0)}% taken by the host`,
  );
  console.log(
    `  the server's event loop: ${fmt(total.eventLoopLate25, 2)}% of its samples late by more than 25 ms, ${fmt(total.eventLoopLate100, 2)}% by more than 100 ms`,
  );
  if (share > MAX_NON_200) {
    console.log(`  FAILED: ${fmt(100 * share, 3)}% of answers were not 200`);
    process.exitCode = 1;
  }
  console.log(
    JSON.stringify({
      bench: "heartbeat-steady",
      devices: DEVICES,
      telemetry_rows_before: TELEMETRY_ROWS,
      offered_rate: RATE,
      rate: Math.round(total.rate),
      duration_s: DURATION_S,
      checkpoint_timeout_s: CHECKPOINT_TIMEOUT_S,
      p50_ms: +total.p50.toFixed(2),
      p99_ms: +total.p99.toFixed(2),
      not_200: total.notOk,
      cpu_ms_per_heartbeat: { server: +total.serverMs.toFixed(3), postgres: +total.postgresMs.toFixed(3) },
      wal_kb_per_heartbeat: +total.walKb.toFixed(2),
      wal_fpi_per_heartbeat: +total.fpi.toFixed(3),
      checkpoints: total.checkpoints,
      machine_busy_percent: +total.machine.busy.toFixed(1),
      machine_io_wait_percent: +total.machine.ioWait.toFixed(1),
      machine_steal_percent: +total.machine.steal.toFixed(1),
      event_loop_late_25ms_percent: +total.eventLoopLate25.toFixed(2),
      event_loop_late_100ms_percent: +total.eventLoopLate100.toFixed(2),
    }),
  );
}

await run(main);
