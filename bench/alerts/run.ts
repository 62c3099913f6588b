/**
 * Alerts benchmark.
 *
 *   node_modules/.bin/bun bench/alerts/run.ts
 *
 * Starts its own PostgreSQL and Outpost (role `all`: HTTP and the job worker that evaluates, in one
 * process, as a single-machine install runs) on loopback, registers DEVICES devices of one product,
 * then measures:
 *   1. heartbeat throughput with 0 and with RULES enabled rules (rules that never fire, so the
 *      figure is the evaluation's cost, not alert creation), CONCURRENCY clients for DURATION s each;
 *   2. breach → alert latency: a heartbeat that breaches, polled until its alert exists (SAMPLES);
 *   3. evaluations per second of one worker: EVENTS stored events re-evaluated against RULES rules
 *      by evaluateAlerts() in this process, with Outpost stopped.
 * Everything it starts, it stops (bounded in time). Environment: DEVICES (200), CONCURRENCY (32),
 * DURATION (10), RULES (200), SAMPLES (20), EVENTS (5000), ROUNDS (3: throughput phases alternate without
 * and with the rules; the ratio is the median of each round's pair), BENCH_EPHEMERAL=1 (no fsync).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { evaluateAlerts } from "../../modules/alerts/evaluation";
import { approveDevices } from "../../modules/devices/service";
import { loadConfig } from "../../modules/platform/config";
import { connectDatabase } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { startBenchServer } from "../heartbeat/server";
import { benchLifecycle } from "../lifecycle";

const DEVICES = Number(process.env.DEVICES ?? 200);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const DURATION_S = Number(process.env.DURATION ?? 10);
const RULES = Number(process.env.RULES ?? 200);
const SAMPLES = Number(process.env.SAMPLES ?? 20);
const EVENTS = Number(process.env.EVENTS ?? 5000);
const ROUNDS = Math.max(1, Math.min(10, Number(process.env.ROUNDS ?? 3)));
const HARD_LIMIT_MS = (DURATION_S * (1 + 2 * ROUNDS) + SAMPLES * 35 + 240) * 1000;
const SCHEMA = {
  product: "bench",
  type: "object",
  properties: {
    sensor: {
      type: "object",
      properties: { temp: { type: "number" }, load: { type: "number" }, state: { type: "string" } },
    },
  },
};
/** The stored telemetry of an agent whose `sensor` script reported `output` (agent/telemetry.ts's shape). */
const sensorTelemetry = (output: Record<string, unknown>) => ({
  device: { uptime_seconds: 1 },
  scripts: { sensor: { data: { status: "success", validation_status: "valid", duration_ms: 1, output } } },
});

const { cleanups, run } = benchLifecycle(HARD_LIMIT_MS);

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;

async function main() {
  console.log(
    `alerts benchmark: ${DEVICES} devices, ${CONCURRENCY} concurrent, ${DURATION_S}s per phase, ${RULES} rules`,
  );
  const directory = mkdtempSync(path.join(tmpdir(), "outpost-bench-pg-"));
  const cluster = await startEmbeddedPostgres({ directory, ephemeral: process.env.BENCH_EPHEMERAL === "1" });
  cleanups.push(async () => {
    await cluster.stop();
    for (const suffix of ["", ".password", ".log", ".owner"])
      rmSync(`${directory}${suffix}`, { recursive: true, force: true });
  });
  const outpost = await startBenchServer({
    databaseUrl: cluster.url,
    extraEnv: { OUTPOST_ROLE: "all" },
    cleanups,
  });
  const db = postgres(cluster.url, { max: 4, onnotice: () => {} });
  cleanups.push(() => db.end({ timeout: 5 }));

  const register = async (i: number) => {
    const mac = (0x02_00_00_00_00_00 + i).toString(16).padStart(12, "0").match(/../g)!.join(":");
    const response = await fetch(`${outpost.url}/api/v1/devices/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        mac_address: mac,
        device_secret: `bench-device-secret-${mac}`,
        product_name: "bench",
        schema_definition: SCHEMA,
      }),
    });
    return ((await response.json()) as { data: { id: string; api_token?: string } }).data;
  };
  const indexes = Array.from({ length: DEVICES }, (_, i) => i);
  await approveDevices(
    db,
    (await Promise.all(indexes.map(register))).map((d) => d.id),
  );
  const devices = await Promise.all(indexes.map(register));
  const beat = (d: { id: string; api_token?: string }, temp: number) =>
    fetch(`${outpost.url}/api/v1/devices/${d.id}/heartbeat?api_key=${d.api_token}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        telemetry: sensorTelemetry({ temp, load: Math.random(), state: "ok" }),
      }),
    }).then((r) => r.status);

  async function throughput(label: string) {
    let next = 0;
    let count = 0;
    let failed = 0;
    const end = Date.now() + DURATION_S * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < end) {
          const status = await beat(devices[next++ % devices.length]!, 20 + Math.random());
          if (status === 200) count++;
          else failed++;
        }
      }),
    );
    const rate = count / DURATION_S;
    console.log(`  ${label}: ${rate.toFixed(0)} heartbeats/s (${failed} failed)`);
    return rate;
  }

  await throughput("warm-up");
  const ruleRows = Array.from({ length: RULES }, (_, i) => ({
    name: `bench rule ${i}`,
    product_name: "bench",
    schema_version: "v1",
    condition_field: i % 2 ? "sensor.temp" : "sensor.load",
    field_type: "number",
    operator: ">",
    threshold_value: String(1e9 + i),
    enabled: false,
  }));
  await db`insert into alert_rules ${db(ruleRows)}`;
  // Alternate the phases (A B, B A, A B …): the telemetry table grows and the machine's load drifts during a
  // run, so "all without, then all with" would charge that drift to the rules.
  const without: number[] = [];
  const withRules: number[] = [];
  const phase = async (round: number, enabled: boolean) => {
    await db`update alert_rules set enabled = ${enabled} where name like 'bench rule %'`;
    const rate = await throughput(`round ${round}, ${enabled ? RULES : 0} rules`);
    (enabled ? withRules : without).push(rate);
  };
  for (let round = 1; round <= ROUNDS; round++) {
    // A B, then B A: the drift within a round is charged to each side in turn.
    const order = round % 2 === 1 ? [false, true] : [true, false];
    for (const enabled of order) await phase(round, enabled);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  // Each round's pair ran back to back, so its ratio is free of the drift between rounds: report the
  // median of the per-round ratios.
  const ratios = withRules.map((w, i) => w / without[i]!);
  console.log(
    `  ratio with/without rules (median of ${ROUNDS} alternating rounds): ${(median(ratios) * 100).toFixed(1)} % (issue target ≥ 90 %); per round: ${ratios.map((r) => `${(r * 100).toFixed(0)} %`).join(", ")}`,
  );

  // 2. Breach → alert latency, one probe device, auto-resolving rule.
  await db`insert into alert_rules (name, product_name, schema_version, condition_field, field_type, operator,
    threshold_value, resolve_after_minutes) values ('latency probe', 'bench', 'v1', 'sensor.temp', 'number', '>', '1000', 0)`;
  const probe = devices[0]!;
  const latencies: number[] = [];
  let missed = 0;
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    await beat(probe, 5000);
    let seen = false;
    for (let polls = 0; polls < 1500 && !seen; polls++) {
      const [open] = await db`select 1 from alerts where device_id = ${probe.id}::uuid and rule_id is not null
        and status = 'active' and message like '%> 1000'`;
      seen = Boolean(open);
      if (!seen && process.env.BENCH_VERBOSE === "1" && polls % 50 === 49) {
        const jobs =
          await db`select task_identifier, run_at, locked_at, attempts, key, now() as now from graphile_worker.jobs`;
        const [cur] = await db`select recorded_at, event_id from alert_evaluation_cursor`;
        console.log("    slow:", JSON.stringify({ jobs, cur }));
      }
      if (!seen) await Bun.sleep(20);
    }
    if (seen) latencies.push(performance.now() - started);
    else missed++; // no alert within 30 s: counted, not averaged in
    await beat(probe, 1);
    for (let polls = 0; polls < 600; polls++) {
      const [open] = await db`select 1 from alerts where device_id = ${probe.id}::uuid and status = 'active'
        and message like '%> 1000'`;
      if (!open) break;
      await Bun.sleep(20);
    }
  }
  if (process.env.BENCH_VERBOSE === "1")
    console.log(`  samples (s): ${latencies.map((l) => (l / 1000).toFixed(2)).join(" ")}`);
  latencies.sort((a, b) => a - b);
  console.log(
    `  breach → alert: p50 ${(percentile(latencies, 0.5) / 1000).toFixed(2)} s, p95 ${(percentile(latencies, 0.95) / 1000).toFixed(2)} s (${latencies.length} samples, ${missed} without an alert within 30 s; goal 5 s, limit 30 s)`,
  );
  await outpost.stop();

  // 3. One worker's evaluation rate: stored events replayed against every rule.
  await db`delete from alert_rules where name = 'latency probe'`;
  const rows = Array.from({ length: EVENTS }, (_, i) => ({
    id: Bun.randomUUIDv7(),
    device_id: devices[i % devices.length]!.id,
    recorded_at: new Date(Date.now() - 60_000 + i).toISOString(),
    payload: JSON.stringify(sensorTelemetry({ temp: 20, load: 0.5, state: "ok" })),
  }));
  for (let i = 0; i < rows.length; i += 1000) {
    await db`insert into telemetry_events ${db(rows.slice(i, i + 1000).map((r) => ({ ...r, payload: db.json(JSON.parse(r.payload)) })))}`;
  }
  await db`update alert_evaluation_cursor set recorded_at = now() - interval '2 minutes', event_id = '00000000-0000-0000-0000-000000000000'`;
  await db`delete from alert_rule_states`;
  const database = connectDatabase(cluster.url);
  cleanups.push(() => database.close());
  const config = loadConfig({
    DATABASE_URL: cluster.url,
    SECRET_KEY: "bench-secret-key-bench-secret-key-0123456789",
  });
  let evaluations = 0;
  let events = 0;
  const started = performance.now();
  for (let runs = 0; runs < 1000; runs++) {
    const result = await evaluateAlerts(database.sql, config, { settleMs: 0 });
    evaluations += result.evaluations;
    events += result.events;
    if (!result.more) break;
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `  one worker: ${(evaluations / seconds).toFixed(0)} rule evaluations/s (${events} events × ${RULES} rules in ${seconds.toFixed(2)} s, ${(events / seconds).toFixed(0)} events/s)`,
  );
}

await run(main);
