/**
 * Backup benchmark: how long `./outpost backup` and `./outpost restore` take, and how large the archive
 * is, for a fleet of a given size.
 *
 *   npm run bench:backup -- [--devices 100000] [--telemetry 1000000]
 *
 * Seeds its own durable embedded PostgreSQL (Outpost's tuning; or BENCH_DATABASE_URL's cluster) with
 * devices and telemetry shaped like the agent's (the built-in scripts' ~2 KB payloads, spread over the
 * last two days), then times the backup (the same code as the command: one snapshot, COPY, gzip) with
 * and without telemetry, and the restore of each into an empty database of the same cluster (one
 * transaction: migrations, COPY, sequences), checking the restored counts.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { createBackup, type Manifest, restoreBackup } from "../../modules/backup/service";
import { generateEd25519 } from "../../modules/platform/host-key";
import { createLogger } from "../../modules/platform/logger";
import { heartbeatBody, storedPayload } from "../heartbeat/body";
import { startMigratedBenchDatabase } from "../heartbeat/database";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const DEVICES = Math.max(100, Math.min(1_000_000, arg("--devices", 100_000)));
const TELEMETRY = Math.max(1000, Math.min(10_000_000, arg("--telemetry", 1_000_000)));

const cleanups: (() => Promise<void> | void)[] = [];
const dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-backup-"));
cleanups.push(() => rmSync(dir, { recursive: true, force: true }));

async function timed<T>(label: string, work: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const started = performance.now();
  const value = await work();
  const seconds = (performance.now() - started) / 1000;
  console.log(`  ${label}: ${seconds.toFixed(1)} s`);
  return { value, seconds };
}

async function seed(sql: postgres.Sql) {
  await timed(
    `devices: ${DEVICES.toLocaleString("en-US")}`,
    () => sql`
    insert into devices (mac_address, product_name, approval_status, api_token_hash, ipv4_address, metadata, last_seen_at)
    select upper(regexp_replace(lpad(to_hex(i), 12, '0'), '(..)(?!$)', '\\1:', 'g')), 'product-' || (i % 8),
      'approved', encode(sha256(i::text::bytea), 'hex'), '10.0.' || (i / 256) % 256 || '.' || i % 256,
      jsonb_build_object('name', 'dev-' || i), now() - make_interval(secs => i % 600)
    from generate_series(1, ${DEVICES}) as i`,
  );
  const payloads = Array.from({ length: 100 }, (_, i) =>
    storedPayload(heartbeatBody("AA:BB:CC:00:00:01", 3600 + i)),
  );
  await sql`create unlogged table bench_payloads (v int, stored json)`;
  await sql`insert into bench_payloads select i - 1, p::json from unnest(${payloads}::text[]) with ordinality u(p, i)`;
  await sql`create unlogged table bench_devices as select (row_number() over (order by id))::int as n, id from devices`;
  await sql`create index on bench_devices (n)`;
  await sql`select telemetry_ensure_partitions(current_date - 3, current_date + 1)`;
  await timed(
    `telemetry: ${TELEMETRY.toLocaleString("en-US")} rows over two days`,
    () => sql`
    insert into telemetry_events (id, device_id, recorded_at, payload)
    select gen_random_uuid(), d.id, now() - make_interval(secs => (${TELEMETRY} - g)::bigint * 172800 / ${TELEMETRY}), p.stored
    from generate_series(1, ${TELEMETRY}) g
    join bench_devices d on d.n = g % ${DEVICES} + 1
    join bench_payloads p on p.v = g % 100`,
  );
  await sql`drop table bench_payloads, bench_devices`;
  await timed("vacuum analyze", () => sql`vacuum analyze`);
}

async function emptyDatabase(url: string, name: string): Promise<string> {
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  cleanups.push(async () => {
    const drop = postgres(url, { max: 1, onnotice: () => {} });
    await drop.unsafe(`drop database if exists ${name} with (force)`);
    await drop.end();
  });
  await admin.end();
  const target = new URL(url);
  target.pathname = `/${name}`;
  return target.toString();
}

async function counts(url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const [row] = await sql<{ devices: number; telemetry: number }[]>`
    select (select count(*)::int from devices) as devices, (select count(*)::int from telemetry_events) as telemetry`;
  await sql.end();
  return row!;
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

try {
  console.log(
    `bench:backup: ${DEVICES.toLocaleString("en-US")} devices, ${TELEMETRY.toLocaleString("en-US")} telemetry rows`,
  );
  const { url, sql } = await startMigratedBenchDatabase("bench:backup", 4, cleanups);
  await seed(sql);
  const [size] = await sql<{ bytes: number }[]>`select pg_database_size(current_database())::float8 as bytes`;
  console.log(`  database size: ${mib(size!.bytes)}`);
  writeFileSync(path.join(dir, "secret_key"), "s".repeat(43), { mode: 0o600 });
  writeFileSync(path.join(dir, "tunnel_host_key"), generateEd25519("bench").private, { mode: 0o600 });
  const rows: string[][] = [];
  for (const withoutTelemetry of [false, true]) {
    const what = withoutTelemetry ? "--without-telemetry" : "full";
    const output = path.join(dir, `${withoutTelemetry ? "small" : "full"}.tar.gz`);
    const backup = await timed(`backup (${what})`, () =>
      createBackup(sql, { output, withoutTelemetry, dataDir: dir, env: {}, outpostVersion: "bench" }),
    );
    const target = await emptyDatabase(url, `outpost_bench_restore_${Date.now()}`);
    const restore = await timed(`restore (${what})`, () =>
      restoreBackup({
        file: output,
        dataDir: path.join(dir, `restored-${what}`),
        databaseUrl: target,
        force: false,
        version: "bench",
        logger: createLogger("silent"),
      }),
    );
    const restored = await counts(target);
    const manifest: Manifest = backup.value;
    const rowsOf = (name: string) => manifest.tables.find((t) => t.name === name)?.rows ?? 0;
    if (restored.devices !== rowsOf("devices") || restored.telemetry !== rowsOf("telemetry_events"))
      throw new Error(`restored counts ${JSON.stringify(restored)} differ from the manifest's`);
    rows.push([
      what,
      `${backup.seconds.toFixed(1)} s`,
      mib(statSync(output).size),
      `${restore.seconds.toFixed(1)} s`,
    ]);
  }
  console.log("\n| backup | backup time | archive | restore time |\n| --- | --- | --- | --- |");
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup();
}
