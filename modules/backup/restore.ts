import type { Writable } from "node:stream";
import type { TransactionSql } from "postgres";
import { requeuePendingNotifications } from "../alerts";
import type { Sql } from "../platform/database";
import { streamArchive } from "./archive-reader";
import { applyInTransaction, type Migration } from "./migrations";
import { BackupError, type Manifest } from "./model";

export interface RestoreProgress {
  table: string;
  done: number;
  total: number;
}

/**
 * The archive's level checked against this build: refused when it is newer (or unknown to it);
 * returns how many of this build's migrations the archive's database had.
 */
export function archiveLevel(manifest: Manifest, migrations: Migration[], version: string): number {
  const { count, last_at, last_tag } = manifest.migration;
  const newest = migrations.at(-1)!;
  if (count > migrations.length || last_at > newest.at)
    throw new BackupError(
      "newer_version",
      `this archive comes from a newer Outpost (${manifest.outpost_version}, migration ${count}${last_tag ? ` ${last_tag}` : ""}); this is Outpost ${version} at migration ${migrations.length} ${newest.tag}: install Outpost ${manifest.outpost_version} or later to restore it`,
    );
  if (migrations[count - 1]?.at !== last_at)
    throw new BackupError(
      "unknown_version",
      `this archive's database is at a migration this Outpost does not have (migration ${count} of ${manifest.outpost_version}); restore it with the Outpost that made it`,
    );
  return count;
}

/**
 * COPY … FROM STDIN on the transaction's connection. postgres.js settles the query once the stream
 * is handed over, and an error PostgreSQL sends after that (a row it refuses, found when the data is
 * ended) neither errors the stream nor calls its `final`: the restore would wait forever. The query's
 * own `reject`, which the connection still calls, is tapped to hear it.
 */
async function copyIn(tx: TransactionSql, table: string, columns: string[]) {
  const query = tx`copy ${tx(table)} (${tx(columns)}) from stdin`;
  const tapped = query as unknown as { reject: (error: unknown) => void };
  const failed = new Promise<never>((_, reject) => {
    const original = tapped.reject;
    tapped.reject = (error) => {
      reject(error);
      original(error);
    };
  });
  failed.catch(() => {});
  const stream = (await query.writable()) as Writable;
  const settle = (event: "drain" | "finish") => {
    let done = () => {};
    const settled = new Promise<void>((resolve, reject) => {
      stream.once(event, resolve);
      stream.once("error", reject);
      done = () => {
        stream.off(event, resolve);
        stream.off("error", reject);
      };
    });
    return Promise.race([failed, settled]).finally(() => done());
  };
  return {
    async write(piece: Uint8Array) {
      if (!stream.write(piece)) await settle("drain");
    },
    async end() {
      const finished = settle("finish");
      stream.end();
      await finished;
    },
  };
}

/** Empties the target (`--force`): Outpost's tables, its migration record and queued jobs. */
async function clearTarget(tx: TransactionSql): Promise<void> {
  await tx`drop schema if exists drizzle cascade`;
  await tx`drop schema if exists public cascade`;
  await tx`create schema public`;
  await tx`select graphile_worker.complete_jobs(array(select id from graphile_worker.jobs))`;
}

/**
 * The database half of a restore, in ONE transaction: this build's migrations up to the archive's
 * level, the daily partitions the archive had, every table's rows (COPY, in dependency order), the
 * sequences, then the migrations since, and pending alert notifications queued again. Any failure
 * rolls all of it back.
 */
export async function restoreDatabase(
  sql: Sql,
  file: string,
  manifest: Manifest,
  options: {
    migrations: Migration[];
    level: number;
    force: boolean;
    progress?: (p: RestoreProgress) => void;
  },
): Promise<void> {
  const tableOfPart = new Map(manifest.tables.flatMap((t) => t.parts.map((part) => [part, t] as const)));
  await sql.begin(async (tx) => {
    if (options.force) await clearTarget(tx);
    await applyInTransaction(tx, options.migrations.slice(0, options.level));
    for (const table of manifest.tables) {
      for (const day of table.partitions?.days ?? [])
        await tx`select daily_partitions_ensure(${table.name}, ${table.partitions!.key}, ${day}::date, ${day}::date)`;
    }
    // Whatever a migration may have put in a table gives way to the archive's rows.
    if (manifest.tables.length > 0) await tx`truncate ${tx(manifest.tables.map((t) => t.name))}`;
    let open: { table: string; copy: Awaited<ReturnType<typeof copyIn>> } | undefined;
    let done = 0;
    await streamArchive(file, manifest, async (name, body) => {
      const table = tableOfPart.get(name);
      if (!table) return; // DATA_DIR's keys: written by the caller once this commits
      if (open?.table !== table.name) {
        await open?.copy.end();
        options.progress?.({ table: table.name, done: done++, total: manifest.tables.length });
        open = { table: table.name, copy: await copyIn(tx, table.name, table.columns) };
      }
      for await (const piece of body) await open.copy.write(piece);
    });
    await open?.copy.end();
    for (const sequence of manifest.sequences)
      await tx`select setval(format('public.%I', ${sequence.name}::text)::regclass, ${sequence.last_value}::bigint, ${sequence.is_called})`;
    await applyInTransaction(tx, options.migrations.slice(options.level));
    await requeuePendingNotifications(tx);
    options.progress?.({ table: "", done: manifest.tables.length, total: manifest.tables.length });
  });
}
