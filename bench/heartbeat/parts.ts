/**
 * What each part of the heartbeat's batch statement costs PostgreSQL, without HTTP: the statement
 * (modules/heartbeat/service.ts) and the same minus its parts, run in-process by two callers over a
 * seeded fleet, as the web process runs it (HEARTBEAT_BATCH_CONCURRENCY = 2).
 *
 *   npm run bench:heartbeat-parts -- [--devices 100000] [--telemetry-rows 1000000] [--batch 13]
 *     [--rounds 2] [--seconds 5]
 *
 * Prints per variant and round the heartbeats/s, PostgreSQL's CPU and the caller's per heartbeat, and
 * first the floor of any statement (`select 1`, per call). A statement's cost is a fixed part plus a
 * part per heartbeat: `--batch 1` and `--batch 50` tell them apart (docs/scaling.md, **A batch's fixed
 * cost**), which is why the web process lets batches grow (HEARTBEAT_BATCH_OVERLAP_AT).
 */
import { acceptHeartbeats } from "../../modules/devices/heartbeat-sql";
import { recordSightings } from "../../modules/devices/sightings";
import { runHeartbeatBatch } from "../../modules/heartbeat/service";
import { jsonTextsParam } from "../../modules/platform/database";
import { insertTelemetryForAccepted } from "../../modules/telemetry/service";
import { benchLifecycle } from "../lifecycle";
import { batchItems, UNLIMITED_RATE } from "./batch-items";
import { startMigratedBenchDatabase } from "./database";
import { knob as flagKnob } from "./flags";
import { shuffle } from "./load";
import { cpuSeconds } from "./probes";
import { seedFleet } from "./seed";

if (process.argv.includes("--help")) {
  console.log(
    "usage: npm run bench:heartbeat-parts -- [--devices N] [--telemetry-rows N] [--batch N] [--rounds N] [--seconds N]",
  );
  process.exit(0);
}
const knob = (flag: string, env: string, fallback: number) =>
  flagKnob("bench:heartbeat-parts", flag, env, fallback);
const DEVICES = Math.max(1000, knob("devices", "BENCH_DEVICES", 100_000));
const TELEMETRY_ROWS = knob("telemetry-rows", "BENCH_TELEMETRY_ROWS", 1_000_000);
const BATCH = Math.max(1, knob("batch", "BENCH_BATCH", 13));
const ROUNDS = Math.max(1, knob("rounds", "BENCH_ROUNDS", 2));
const SECONDS = Math.max(1, knob("seconds", "BENCH_SECONDS", 5));
const { cleanups, run } = benchLifecycle(30 * 60_000);

async function main() {
  const { postgresPid, sql } = await startMigratedBenchDatabase("bench:heartbeat-parts", 4, cleanups);
  console.log(`heartbeat statement by parts: ${DEVICES} devices, batches of ${BATCH}, two callers`);
  const { devices, macs } = await seedFleet(sql, DEVICES, TELEMETRY_ROWS);
  shuffle(devices);
  const batch = batchItems(devices, macs[0]!, BATCH).next;
  type Batch = ReturnType<typeof batch>;
  // The variants' `input`: the statement's own (runHeartbeatBatch), for the parts left in.
  const input = (items: Batch) => sql`
    with input as (
      select * from unnest(${items.map((_, i) => i)}::int[], ${items.map((i) => i.deviceId)}::uuid[],
        ${items.map((i) => i.tokenHash)}::text[], ${items.map((i) => i.schemaHash)}::text[],
        ${items.map((i) => i.eventId)}::uuid[], ${jsonTextsParam(
          sql,
          items.map((i) => i.payloadJson),
        )}) as i(ord, device_id, token_hash, schema_hash, event_id, payload))`;
  /** Any statement's cost: its rates and CPU are per call, not per heartbeat. */
  const FLOOR = "select 1 (a call)";
  const asyncCommit = sql`set_config('synchronous_commit', 'off', true)`;
  const variants: [string, (items: Batch) => Promise<unknown>][] = [
    [FLOOR, () => sql`select 1`],
    [
      "the statement",
      (items) =>
        runHeartbeatBatch(sql, UNLIMITED_RATE, items, (error) => {
          throw error;
        }),
    ],
    [
      "without the claim",
      (items) => sql`${input(items)},
        accepted as (${acceptHeartbeats(sql, UNLIMITED_RATE)}), sighted as (${recordSightings(sql)}),
        stored as (${insertTelemetryForAccepted(sql)})
        select a.ord, ${asyncCommit} from accepted a`,
    ],
    [
      "nor the sighting",
      (items) => sql`${input(items)},
        accepted as (${acceptHeartbeats(sql, UNLIMITED_RATE)}), stored as (${insertTelemetryForAccepted(sql)})
        select a.ord, ${asyncCommit} from accepted a`,
    ],
    [
      "device update only",
      (items) => sql`${input(items)}, accepted as (${acceptHeartbeats(sql, UNLIMITED_RATE)})
        select a.ord, ${asyncCommit} from accepted a`,
    ],
    [
      "telemetry insert only",
      (items) => sql`${input(items)},
        accepted as (select device_id as id, ord from input), stored as (${insertTelemetryForAccepted(sql)})
        select a.ord, ${asyncCommit} from accepted a`,
    ],
  ];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, statement] of variants) {
      let stop = false;
      let heartbeats = 0;
      const caller = async () => {
        while (!stop) {
          await statement(name === FLOOR ? [] : batch());
          heartbeats += name === FLOOR ? 1 : BATCH;
        }
      };
      const callers = [caller(), caller()];
      await Bun.sleep(1000); // warm-up
      const before = { pg: cpuSeconds(postgresPid, true), me: process.cpuUsage(), n: heartbeats };
      const started = performance.now();
      await Bun.sleep(SECONDS * 1000);
      const n = heartbeats - before.n;
      const elapsed = (performance.now() - started) / 1000;
      const pg = cpuSeconds(postgresPid, true) - before.pg;
      const me = process.cpuUsage(before.me);
      stop = true;
      await Promise.all(callers);
      console.log(
        `  round ${round}  ${name.padEnd(22)} ${String(Math.round(n / elapsed)).padStart(6)} heartbeats/s  PostgreSQL ${((1000 * pg) / n).toFixed(3)} ms  caller ${((me.user + me.system) / 1000 / n).toFixed(3)} ms per heartbeat`,
      );
    }
  }
}

await run(main);
