/**
 * Which pages PostgreSQL logs whole after a checkpoint while heartbeats arrive, and why: the batch
 * statement run in-process (as the web process runs it, two callers, batches of 32) at a fixed rate
 * over a seeded fleet, a checkpoint half-way, then the WAL written after it read back with
 * pg_walinspect and grouped by relation and record type (`Heap/HOT_UPDATE` is a heartbeat's first change
 * of a device page; `XLOG/FPI_FOR_HINT` a page logged whole because someone, often autovacuum, set a
 * hint bit on it with data checksums on).
 *
 *   npm run bench:wal-images -- [--devices 100000] [--telemetry-rows 1000000] [--heartbeats 480000]
 *     [--rate 4000]
 *
 * Prints the full-page images and WAL per heartbeat after the checkpoint, the top relations, and the
 * autovacuum passes each table had. No HTTP: docs/scaling.md, **Where the full-page images after a
 * checkpoint come from**. `BENCH_PG_SETTINGS` (database.ts) tries other settings.
 */
import { runHeartbeatBatch } from "../../modules/heartbeat/service";
import { benchLifecycle } from "../lifecycle";
import { batchItems, UNLIMITED_RATE } from "./batch-items";
import { startMigratedBenchDatabase } from "./database";
import { knob as flagKnob } from "./flags";
import { shuffle } from "./load";
import { databaseCounters } from "./probes";
import { seedFleet } from "./seed";

if (process.argv.includes("--help")) {
  console.log(
    "usage: npm run bench:wal-images -- [--devices N] [--telemetry-rows N] [--heartbeats N] [--rate N]",
  );
  process.exit(0);
}
const knob = (flag: string, env: string, fallback: number) =>
  flagKnob("bench:wal-images", flag, env, fallback);
const DEVICES = Math.max(1000, knob("devices", "BENCH_DEVICES", 100_000));
const TELEMETRY_ROWS = knob("telemetry-rows", "BENCH_TELEMETRY_ROWS", 1_000_000);
const HEARTBEATS = Math.max(1000, knob("heartbeats", "BENCH_HEARTBEATS", 480_000));
const RATE = Math.max(1, knob("rate", "BENCH_RATE", 4000));
const BATCH = 32;
const { cleanups, run } = benchLifecycle((HEARTBEATS / RATE + 600 + TELEMETRY_ROWS / 10_000) * 1000);

async function main() {
  const { sql } = await startMigratedBenchDatabase("bench:wal-images", 4, cleanups);
  const [{ data_checksums: checksums }] = await sql`show data_checksums`;
  console.log(
    `WAL images after a checkpoint: ${DEVICES} devices, ${HEARTBEATS} heartbeats at ${RATE}/s, data checksums ${checksums}`,
  );
  const { devices, macs } = await seedFleet(sql, DEVICES, TELEMETRY_ROWS);
  shuffle(devices);
  await sql`create extension if not exists pg_walinspect`;
  const items = batchItems(devices, macs[0]!, BATCH);
  const startedAt = performance.now();
  const caller = async () => {
    while (items.sent() < HEARTBEATS) {
      const wait = startedAt + (items.sent() / RATE) * 1000 - performance.now();
      if (wait > 1) await Bun.sleep(wait);
      await runHeartbeatBatch(sql, UNLIMITED_RATE, items.next(), (error) => {
        throw error;
      });
    }
  };
  const callers = Promise.all([caller(), caller()]);
  while (items.sent() < HEARTBEATS / 2) await Bun.sleep(100);
  const sentBefore = items.sent();
  const before = await databaseCounters(sql);
  await sql`checkpoint`;
  // From the checkpoint's redo point: the first changes after it (the images) come while it still writes.
  const [{ lsn: from }] = await sql<{ lsn: string }[]>`select redo_lsn as lsn from pg_control_checkpoint()`;
  await callers;
  const after = await databaseCounters(sql);
  const [{ lsn: to }] = await sql<{ lsn: string }[]>`select pg_current_wal_lsn() as lsn`;
  const heartbeats = items.sent() - sentBefore;
  // Counted in the WAL itself: pg_stat_wal has a process's images only once it reports them, and an
  // autovacuum worker still in its pass has not.
  const [total] = await sql<{ images: number; mb: number }[]>`
    select count(*) filter (where block_fpi_length > 0)::int as images,
      round(sum(block_fpi_length) / 1048576.0, 1)::float8 as mb
    from pg_get_wal_block_info(${from}::pg_lsn, ${to}::pg_lsn, true)`;
  const walBytes = await sql<
    { bytes: string }[]
  >`select pg_wal_lsn_diff(${to}::pg_lsn, ${from}::pg_lsn) as bytes`;
  console.log(
    `  after the checkpoint: ${heartbeats} heartbeats, ${total!.images} full-page images (${(total!.images / heartbeats).toFixed(3)} a heartbeat, ${total!.mb} MB), ${(Number(walBytes[0]!.bytes) / heartbeats / 1024).toFixed(2)} KB of WAL a heartbeat (pg_stat_wal so far: ${after.walFpi - before.walFpi} images)`,
  );
  const rows = await sql<{ what: string; images: string; mb: number; records: string }[]>`
    select coalesce(pg_filenode_relation(reltablespace, relfilenode)::text, relfilenode::text)
        || case relforknumber when 0 then '' else ' (fork ' || relforknumber || ')' end
        || '  ' || resource_manager || '/' || record_type as what,
      count(*) filter (where block_fpi_length > 0) as images,
      round(sum(block_fpi_length) / 1048576.0, 1)::float8 as mb, count(*) as records
    from pg_get_wal_block_info(${from}::pg_lsn, ${to}::pg_lsn, true)
    group by 1 having count(*) filter (where block_fpi_length > 0) > 0
    order by 2 desc limit 12`;
  console.log("  images by relation and record type (pg_walinspect):");
  for (const r of rows)
    console.log(
      `    ${String(r.images).padStart(8)} images ${String(r.mb).padStart(8)} MB  ${r.what} (${r.records} records)`,
    );
  const vacuums = await sql<{ relname: string; autovacuum_count: string }[]>`
    select relname, autovacuum_count from pg_stat_user_tables
    where autovacuum_count > 0 order by relname`;
  console.log(
    `  autovacuum passes: ${vacuums.map((v) => `${v.relname} ${v.autovacuum_count}`).join(", ") || "none"}`,
  );
}

await run(main);
