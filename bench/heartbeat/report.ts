/**
 * What bench:heartbeat prints after its main measurement: the figures for people, then (returned) the
 * one line of JSON for tracking them over time.
 */
import { loadavg } from "node:os";
import type { Ceiling } from "./ceilings";
import type { Floor } from "./floor";
import { type DatabaseCounters as Counters, type MachineShares, percentile } from "./probes";

export interface Measurement {
  devices: number;
  inRegistrationOrder: boolean;
  telemetryRows: number;
  concurrency: number;
  durationS: number;
  pool: number;
  elapsedS: number;
  /** Latencies of every answer, sorted ascending. */
  latencies: number[];
  statuses: Map<number, number>;
  networkErrors: number;
  /** CPU seconds spent while measuring. */
  cpu: { server: number; client: number; postgres: number };
  /** How busy the machine was while measuring, and each web process's main thread (its event loop), %. */
  machine: MachineShares;
  eventLoopsBusy: number[];
  /** PostgreSQL's CPU seconds while measuring by process role (probes' postgresCpuByRole). */
  postgresByRole: Map<string, number>;
  counters: { before: Counters; after: Counters };
  /** Statements PostgreSQL ran while measuring, most called first. */
  statements: StatementDelta[];
  ceilings: { single: Ceiling; durable: Ceiling; multiRow: Ceiling; deviceRows: Ceiling; BATCH_ROWS: number };
  floor: Floor;
  /** More than this share of answers that are not 200 fails the run. */
  maxNon200: number;
}

/** Prints the report; returns the JSON summary and whether too many answers were not 200. */
export function reportHeartbeatRun(m: Measurement): { summary: string; failed: boolean } {
  const fmt = (n: number, digits = 1) => n.toFixed(digits);
  const { latencies, statuses, counters, cpu } = m;
  const { single, durable, multiRow, BATCH_ROWS } = m.ceilings;
  const heartbeats = latencies.length;
  const ok = statuses.get(200) ?? 0;
  const rate = ok / m.elapsedS;
  const delta = (key: keyof Counters) => counters.after[key] - counters.before[key];
  const perHeartbeat = (key: keyof Counters) => fmt(delta(key) / heartbeats, 2);
  const hotPercent = (100 * delta("deviceHot")) / delta("deviceUpd");
  const calls = m.statements.reduce((sum, s) => sum + s.calls, 0);
  // The heartbeat's batch statement (modules/heartbeat/service.ts): how many heartbeats each carried.
  const batches = m.statements.find((s) => s.query.startsWith("with input as"))?.calls ?? 0;
  const perBatch = batches > 0 ? heartbeats / batches : Number.NaN;
  const ofCeiling = (100 * rate) / single.rowsPerSecond;
  const p = (q: number) => percentile(latencies, q);
  const meanLatencyMs = latencies.reduce((sum, ms) => sum + ms, 0) / heartbeats;
  const cpuMs = (seconds: number) => (1000 * seconds) / heartbeats;
  const walKb = delta("walBytes") / heartbeats / 1024;
  const checkpointMb = (delta("checkpointBuffers") * 8) / 1024;

  console.log("");
  console.log(
    `  heartbeats:       ${heartbeats} in ${fmt(m.elapsedS)}s (status ${JSON.stringify(Object.fromEntries(statuses))}, network errors ${m.networkErrors})`,
  );
  console.log(`  throughput:       ${fmt(rate, 0)} heartbeats/s`);
  console.log(
    `  latency:          mean ${fmt(meanLatencyMs)} ms, p50 ${fmt(p(50))} ms, p90 ${fmt(p(90))} ms, p99 ${fmt(p(99))} ms, max ${fmt(latencies[heartbeats - 1] ?? Number.NaN)} ms`,
  );
  console.log(
    `  ceiling:          ${fmt(single.rowsPerSecond, 0)} raw telemetry inserts/s (same rows and commit mode, ${m.pool} connections, ${m.concurrency} callers)`,
  );
  console.log(
    `                    WAL ${fmt(single.walKbPerRow, 2)} KB (${fmt(single.fullPageImagesPerRow, 2)} full-page images) per row; each ceiling starts from a checkpoint, as the load did`,
  );
  console.log(
    `                    CPU per row: PostgreSQL ${fmt(single.cpuMsPerRow.postgres, 3)} ms, the inserting client ${fmt(single.cpuMsPerRow.client, 3)} ms`,
  );
  console.log(`                    ${fmt(durable.rowsPerSecond, 0)} raw inserts/s with every commit durable`);
  console.log(
    `  ratio:            ${fmt(ofCeiling)}% of the ceiling (${fmt((100 * rate) / durable.rowsPerSecond)}% of the durable one)`,
  );
  console.log(
    `  per heartbeat:    ${fmt(calls / heartbeats, 2)} SQL statements (pg_stat_statements; batches of ${fmt(perBatch)}), ${perHeartbeat("xact")} transactions`,
  );
  console.log(
    `                    ${perHeartbeat("ins")} rows inserted, ${perHeartbeat("upd")} rows updated (${perHeartbeat("hot")} HOT)`,
  );
  console.log(`                    devices: ${fmt(hotPercent)}% of row updates HOT`);
  console.log(
    `                    WAL ${fmt(walKb, 2)} KB (${perHeartbeat("walFpi")} full-page images); checkpoints wrote ${fmt(checkpointMb)} MB while measuring`,
  );
  console.log(
    `  CPU per heartbeat: server ${fmt(cpuMs(cpu.server), 3)} ms, PostgreSQL ${fmt(cpuMs(cpu.postgres), 3)} ms, load generator ${fmt(cpuMs(cpu.client), 3)} ms (machine: ${navigator.hardwareConcurrency} cores, load average ${loadavg()[0].toFixed(1)})`,
  );
  const loops = m.eventLoopsBusy.map((busy) => `${fmt(busy, 0)}%`).join(", ");
  const eventLoops =
    m.eventLoopsBusy.length > 1
      ? `the ${m.eventLoopsBusy.length} web processes' event loops ${loops}`
      : `the server's event loop ${loops}`;
  console.log(
    `  machine:          ${fmt(m.machine.busy, 0)}% busy, ${fmt(m.machine.idle, 0)}% idle (${fmt(m.machine.ioWait, 0)}% waiting on I/O), ${fmt(m.machine.steal, 0)}% taken by the host while measuring (the single-row ceiling's: ${fmt(single.machine.busy, 0)}% busy); ${eventLoops} busy`,
  );
  const roles = [...m.postgresByRole].filter(([, seconds]) => seconds > 0).sort((a, b) => b[1] - a[1]);
  console.log(
    `    PostgreSQL by process: ${roles.map(([role, seconds]) => `${role} ${fmt(cpuMs(seconds), 3)}`).join(", ")} ms`,
  );
  console.log("    calls  exec ms/call (wall)  statement");
  for (const s of m.statements.slice(0, 5))
    console.log(`    ${String(s.calls).padStart(8)}  ${fmt(s.execMs / s.calls, 3).padStart(8)}  ${s.query}`);
  console.log(
    `                    ${fmt(multiRow.rowsPerSecond, 0)} rows/s as multi-row INSERTs of ${BATCH_ROWS} (the API reaches ${fmt((100 * rate) / multiRow.rowsPerSecond)}% of it); CPU per row: PostgreSQL ${fmt(multiRow.cpuMsPerRow.postgres, 3)} ms, client ${fmt(multiRow.cpuMsPerRow.client, 3)} ms`,
  );
  const { floor } = m;
  const cores = navigator.hardwareConcurrency;
  const apiCpuMs = cpuMs(cpu.server) + cpuMs(cpu.postgres) + cpuMs(cpu.client);
  console.log(
    `  floor:            a bare server parsing the same bodies: ${fmt(floor.http.requestsPerSecond, 0)} requests/s, CPU per request server ${fmt(floor.http.cpuMsPerRequest.server, 3)} ms, load generator ${fmt(floor.http.cpuMsPerRequest.client, 3)} ms`,
  );
  console.log(
    `                    device rows updated ${BATCH_ROWS} a statement: CPU per row PostgreSQL ${fmt(m.ceilings.deviceRows.cpuMsPerRow.postgres, 3)} ms, client ${fmt(m.ceilings.deviceRows.cpuMsPerRow.client, 3)} ms`,
  );
  const parts = floor.cpuMsPerHeartbeat;
  console.log(
    `                    the least a heartbeat costs here: ${fmt(parts.total, 3)} ms of CPU (HTTP ${fmt(parts.http, 3)}, telemetry row ${fmt(parts.telemetryRow, 3)}, device row ${fmt(parts.deviceRow, 3)}), at most ${fmt(floor.maxRate, 0)} heartbeats/s on ${cores} cores; the API spends ${fmt(apiCpuMs, 3)} ms (the floor is ${fmt((100 * parts.total) / apiCpuMs)}% of it)`,
  );
  const answered = heartbeats + m.networkErrors;
  const notOk = answered - ok;
  const refusedShare = answered === 0 ? 1 : notOk / answered;
  console.log(
    `  not 200:          ${notOk} of ${answered} (${fmt(100 * refusedShare, 3)}%; 429s ${statuses.get(429) ?? 0}, network errors ${m.networkErrors}); at most ${m.maxNon200 * 100}% allowed`,
  );
  const pass = rate >= 10_000 && p(99) < 100;
  console.log(
    `  target (≥ 10,000/s, p99 < 100 ms at ${m.concurrency} concurrent): ${pass ? "met" : "NOT met"}${floor.maxRate < 10_000 ? ` (out of reach here: the floor allows at most ${fmt(floor.maxRate, 0)}/s)` : ""}`,
  );
  const failed = refusedShare > m.maxNon200;
  if (failed)
    console.log(`  FAILED: ${fmt(100 * refusedShare, 3)}% of answers were not 200 (the rate would flatter)`);
  const summary = {
    bench: "heartbeat",
    devices: m.devices,
    order: m.inRegistrationOrder ? "registration" : "shuffled",
    device_updates_hot_percent: +hotPercent.toFixed(1),
    wal_kb_per_heartbeat: +walKb.toFixed(2),
    wal_fpi_per_heartbeat: +(delta("walFpi") / heartbeats).toFixed(3),
    checkpoint_mb_while_measuring: +checkpointMb.toFixed(1),
    telemetry_rows_before: m.telemetryRows,
    concurrency: m.concurrency,
    duration_s: m.durationS,
    rate: Math.round(rate),
    ratio_to_single_row_ceiling_percent: +ofCeiling.toFixed(1),
    heartbeats_per_batch: +perBatch.toFixed(1),
    p50_ms: +p(50).toFixed(2),
    p95_ms: +p(95).toFixed(2),
    p99_ms: +p(99).toFixed(2),
    not_200: notOk,
    status_429: statuses.get(429) ?? 0,
    network_errors: m.networkErrors,
    cpu_ms_per_heartbeat: {
      server: +cpuMs(cpu.server).toFixed(3),
      postgres: +cpuMs(cpu.postgres).toFixed(3),
      load_generator: +cpuMs(cpu.client).toFixed(3),
    },
    machine_busy_percent: +m.machine.busy.toFixed(1),
    machine_idle_percent: +m.machine.idle.toFixed(1),
    machine_io_wait_percent: +m.machine.ioWait.toFixed(1),
    machine_steal_percent: +m.machine.steal.toFixed(1),
    web_processes: m.eventLoopsBusy.length,
    server_event_loop_busy_percent: m.eventLoopsBusy.map((busy) => +busy.toFixed(1)),
    mean_latency_ms: +meanLatencyMs.toFixed(2),
    ceiling_single_row_machine_busy_percent: +single.machine.busy.toFixed(1),
    postgres_cpu_ms_per_heartbeat_by_process: Object.fromEntries(
      roles.map(([role, seconds]) => [role, +cpuMs(seconds).toFixed(3)]),
    ),
    ceiling_single_row: Math.round(single.rowsPerSecond),
    ceiling_single_row_durable: Math.round(durable.rowsPerSecond),
    ceiling_multi_row: Math.round(multiRow.rowsPerSecond),
    ceiling_single_row_wal_fpi_per_row: +single.fullPageImagesPerRow.toFixed(3),
    ceiling_single_row_cpu_ms_per_row: cpuPerRow(single),
    ceiling_multi_row_cpu_ms_per_row: cpuPerRow(multiRow),
    ceiling_device_rows_cpu_ms_per_row: cpuPerRow(m.ceilings.deviceRows),
    http_floor_rate: Math.round(floor.http.requestsPerSecond),
    http_floor_cpu_ms_per_request: {
      server: +floor.http.cpuMsPerRequest.server.toFixed(3),
      load_generator: +floor.http.cpuMsPerRequest.client.toFixed(3),
    },
    floor_cpu_ms_per_heartbeat: {
      http: +parts.http.toFixed(3),
      telemetry_row: +parts.telemetryRow.toFixed(3),
      device_row: +parts.deviceRow.toFixed(3),
      total: +parts.total.toFixed(3),
    },
    floor_max_rate: Math.round(floor.maxRate),
    load_average: +loadavg()[0].toFixed(2),
  };
  return { summary: JSON.stringify(summary), failed };
}

const cpuPerRow = ({ cpuMsPerRow }: Ceiling) => ({
  postgres: +cpuMsPerRow.postgres.toFixed(3),
  client: +cpuMsPerRow.client.toFixed(3),
});

/** A statement's calls and execution time (ms, wall) while measuring. */
export interface StatementDelta {
  query: string;
  calls: number;
  execMs: number;
}

/** pg_stat_statements' calls between two snapshots, most called first, without the probes' own. */
export function statementDeltas(
  before: Map<string, StatementDelta>,
  after: Map<string, StatementDelta>,
): StatementDelta[] {
  const deltas: StatementDelta[] = [];
  for (const [query, stat] of after) {
    if (/pg_stat|pg_database|pg_catalog/.test(query)) continue;
    const calls = stat.calls - (before.get(query)?.calls ?? 0);
    const execMs = stat.execMs - (before.get(query)?.execMs ?? 0);
    if (calls > 0) deltas.push({ query: query.replace(/\s+/g, " ").slice(0, 90), calls, execMs });
  }
  return deltas.sort((a, b) => b.calls - a.calls);
}
