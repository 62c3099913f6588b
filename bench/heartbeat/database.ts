import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { applyMigrations, connectDatabase, type Db, type Sql } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";

/**
 * `BENCH_PG_SETTINGS="wal_compression=pglz,wal_buffers=64MB"`: settings to try in a benchmark's own
 * cluster without changing Outpost's tuning (names checked, values quoted).
 */
export function settingsFromEnv(text = process.env.BENCH_PG_SETTINGS ?? ""): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const pair of text.split(",").filter((p) => p.trim() !== "")) {
    const at = pair.indexOf("=");
    const name = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    if (at < 0 || !/^[a-z_][a-z0-9_.]*$/.test(name) || value === "")
      throw new Error(`BENCH_PG_SETTINGS: expected name=value[,name=value…], not ${JSON.stringify(pair)}`);
    settings[name] = value;
  }
  return settings;
}

/**
 * A database of its own for one benchmark run: in `BENCH_DATABASE_URL`'s cluster when set, else in an
 * embedded cluster with Outpost's tuning, pg_stat_statements and room for the load's connections (plus
 * `settings` and BENCH_PG_SETTINGS, ALTER SYSTEM before it restarts). Dropping it (and the cluster) goes
 * on `cleanups`. `postgresPid` is the postmaster's, for CPU accounting, when the cluster is ours.
 */
export async function startBenchDatabase({
  ephemeral,
  settings = {},
  cleanups,
}: {
  ephemeral: boolean;
  settings?: Record<string, string>;
  cleanups: (() => Promise<void> | void)[];
}): Promise<{ url: string; postgresPid: number | undefined }> {
  let adminUrl = process.env.BENCH_DATABASE_URL;
  let postgresPid: number | undefined;
  if (!adminUrl) {
    const directory = mkdtempSync(path.join(tmpdir(), "outpost-bench-pg-"));
    let cluster = await startEmbeddedPostgres({ directory, ephemeral });
    const setup = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await setup.unsafe("alter system set shared_preload_libraries = 'pg_stat_statements'");
    await setup.unsafe("alter system set max_connections = 200");
    const tried = settingsFromEnv();
    if (Object.keys(tried).length > 0)
      console.log(
        `  PostgreSQL with ${Object.entries(tried)
          .map(([n, v]) => `${n}=${v}`)
          .join(", ")}`,
      );
    for (const [name, value] of Object.entries({ ...settings, ...tried }))
      await setup.unsafe(`alter system set ${name} = '${value.replaceAll("'", "''")}'`);
    await setup.end();
    await cluster.stop();
    cluster = await startEmbeddedPostgres({ directory, ephemeral });
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
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  cleanups.push(async () => {
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  });
  return { url: url.toString(), postgresPid };
}

/**
 * A durable cluster of the benchmark's own (its postmaster's CPU is what `bench` measures) with Outpost's
 * schema migrated, and a pool of `pool` connections to it; all of it goes on `cleanups`.
 */
export async function startMigratedBenchDatabase(
  bench: string,
  pool: number,
  cleanups: (() => Promise<void> | void)[],
): Promise<{ url: string; postgresPid: number; sql: Sql; db: Db }> {
  const { url, postgresPid } = await startBenchDatabase({ ephemeral: false, cleanups });
  if (!postgresPid) throw new Error(`${bench} measures its own PostgreSQL: unset BENCH_DATABASE_URL`);
  const database = connectDatabase(url, pool);
  cleanups.push(() => database.sql.end({ timeout: 5 }));
  await applyMigrations(database);
  return { url, postgresPid, sql: database.sql, db: database.db };
}
