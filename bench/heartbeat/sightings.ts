/**
 * What a heartbeat batch's sighting costs PostgreSQL (modules/devices/sightings.ts): the real batch
 * statement (runHeartbeatBatch) run back to back over a seeded fleet, in alternating rounds with the
 * sighting's insert on and off (off: a BEFORE INSERT trigger that drops the row, so the difference is
 * the insert itself, heap, index and WAL, less one trigger call). Alternating rounds keep a machine
 * whose speed drifts from favouring one side. Then the prune job's cost per heartbeat it reads.
 *
 *   npm run bench:sightings -- [--devices 100000] [--batch 20] [--batches 300] [--rounds 10]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { heartbeatInput } from "../../modules/devices/service";
import { pruneSightings } from "../../modules/devices/sightings";
import { runHeartbeatBatch } from "../../modules/heartbeat/service";
import { applyMigrations, connectDatabase } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { UNLIMITED_RATE } from "./batch-items";
import { heartbeatBody, storedPayload } from "./body";
import { cpuSeconds } from "./probes";
import { seedFleet } from "./seed";

const args = process.argv.slice(2);
if (args.includes("--help")) {
  console.log("npm run bench:sightings -- [--devices 100000] [--batch 20] [--batches 300] [--rounds 10]");
  process.exit(0);
}
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number from 1`);
  return value;
};
const DEVICES = arg("--devices", 100_000);
const BATCH = arg("--batch", 20);
const BATCHES = arg("--batches", 300);
const ROUNDS = arg("--rounds", 10);

const dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-sightings-"));
const cluster = await startEmbeddedPostgres({ directory: path.join(dir, "pg") }); // as installed: durable
const database = connectDatabase(cluster.url, 2);
try {
  await applyMigrations(database);
  const sql = database.sql;
  const { devices, macs } = await seedFleet(sql, DEVICES, 0);
  await sql.unsafe(`
    create function bench_drop_sighting() returns trigger language plpgsql as $$ begin return null; end $$`);
  const payloadJson = storedPayload(heartbeatBody(macs[0]!, 1));
  const inputs = devices.map((device) => ({
    deviceId: device.id,
    ...heartbeatInput(device.token, undefined),
  }));
  let next = 0;
  const round = async () => {
    const cpuBefore = cluster.pid ? cpuSeconds(cluster.pid, true) : Number.NaN;
    const started = performance.now();
    for (let b = 0; b < BATCHES; b++) {
      const items = Array.from({ length: BATCH }, () => ({
        ...inputs[next++ % inputs.length]!,
        eventId: Bun.randomUUIDv7(),
        payloadJson,
        hostKey: null,
      }));
      await runHeartbeatBatch(sql, UNLIMITED_RATE, items, (error) => {
        throw error;
      });
    }
    const heartbeats = BATCHES * BATCH;
    return {
      wallMs: (performance.now() - started) / heartbeats,
      postgresMs:
        (((cluster.pid ? cpuSeconds(cluster.pid, true) : Number.NaN) - cpuBefore) * 1000) / heartbeats,
    };
  };
  await round(); // warm-up
  const results: Record<"with" | "without", { wallMs: number; postgresMs: number }[]> = {
    with: [],
    without: [],
  };
  console.log(
    `${DEVICES} devices, batches of ${BATCH}, ${BATCHES} batches a round, ${ROUNDS} rounds each way`,
  );
  for (let r = 0; r < ROUNDS * 2; r++) {
    const side = r % 2 === 0 ? "with" : "without";
    if (side === "without")
      await sql`create trigger bench_drop_sighting before insert on device_sightings
        for each row execute function bench_drop_sighting()`;
    else await sql`drop trigger if exists bench_drop_sighting on device_sightings`;
    const result = await round();
    results[side].push(result);
    console.log(
      `  round ${r + 1} ${side.padEnd(7)} ${result.wallMs.toFixed(4)} ms/heartbeat wall, ${result.postgresMs.toFixed(4)} ms PostgreSQL CPU`,
    );
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const summary = {
    bench: "sightings",
    devices: DEVICES,
    batch: BATCH,
    rounds: ROUNDS,
    wall_ms_per_heartbeat: {
      with: median(results.with.map((r) => r.wallMs)),
      without: median(results.without.map((r) => r.wallMs)),
    },
    postgres_ms_per_heartbeat: {
      with: median(results.with.map((r) => r.postgresMs)),
      without: median(results.without.map((r) => r.postgresMs)),
    },
  };
  // The prune job, per heartbeat it reads, twice. Steady: one more pass over the whole fleet, then the
  // sightings from before it pruned: each is superseded, as in a fleet polling more often than the
  // retention. Silent: then the pass's own sightings, each still its device's latest, so each is also
  // kept in device_last_sightings (the fleet fell silent at once: the dearest case).
  await sql`drop trigger if exists bench_drop_sighting on device_sightings`;
  const passStarted = Date.now();
  for (let i = 0; i < inputs.length; i += BATCH) {
    const items = inputs
      .slice(i, i + BATCH)
      .map((input) => ({ ...input, eventId: Bun.randomUUIDv7(), payloadJson, hostKey: null }));
    await runHeartbeatBatch(sql, UNLIMITED_RATE, items, (error) => {
      throw error;
    });
  }
  const measurePrune = async (retentionSeconds: number) => {
    const [{ ids }] = await sql<{ ids: number }[]>`
      select coalesce(sum(cardinality(device_ids)), 0)::int as ids from device_sightings
      where seen_at < now() - make_interval(secs => ${retentionSeconds})`;
    const cpuBefore = cluster.pid ? cpuSeconds(cluster.pid, true) : Number.NaN;
    const started = performance.now();
    const pruned = await pruneSightings(sql, retentionSeconds);
    const wallMs = performance.now() - started;
    const postgresMs = ((cluster.pid ? cpuSeconds(cluster.pid, true) : Number.NaN) - cpuBefore) * 1000;
    return {
      sightings: pruned.pruned,
      heartbeats: ids,
      kept: pruned.kept,
      wall_ms: Math.round(wallMs),
      postgres_ms_per_heartbeat: +(postgresMs / ids).toFixed(5),
    };
  };
  const prune = {
    steady: await measurePrune((Date.now() - passStarted) / 1000 + 1),
    silent: await measurePrune(0),
  };
  for (const [kind, result] of Object.entries(prune))
    console.log(
      `prune (${kind}): ${result.sightings} sightings of ${result.heartbeats} heartbeats (${result.kept} kept as a device's latest) in ${result.wall_ms} ms, ${result.postgres_ms_per_heartbeat} ms PostgreSQL CPU per heartbeat`,
    );
  console.log(
    `median: wall ${summary.wall_ms_per_heartbeat.with.toFixed(4)} vs ${summary.wall_ms_per_heartbeat.without.toFixed(4)} ms, PostgreSQL CPU ${summary.postgres_ms_per_heartbeat.with.toFixed(4)} vs ${summary.postgres_ms_per_heartbeat.without.toFixed(4)} ms per heartbeat (with vs without the sighting)`,
  );
  console.log(JSON.stringify({ ...summary, prune }));
} finally {
  await database.close();
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
