import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { TransactionSql } from "postgres";
import type { Sql } from "../platform/database";
import { TELEMETRY_HISTORY_TABLES } from "../telemetry/service";
import { ArchiveWriter } from "./archive-writer";
import { type CatalogTable, dailyPartitions, listTables, sequenceStates } from "./catalog";
import { buildMigrations, databaseLevel } from "./migrations";
import {
  ARCHIVE_FORMAT_VERSION,
  type ArchiveTable,
  BackupError,
  KEY_FILES,
  type KeyFile,
  MANIFEST_ENTRY,
  type Manifest,
} from "./model";

/** The most of one table's COPY output held in memory: a larger table goes into several entries. */
export const PART_BYTES = 8 * 1024 * 1024;

export interface BackupProgress {
  table: string;
  /** Tables done so far and in all. */
  done: number;
  total: number;
  rows: number;
  /** Compressed bytes written so far. */
  bytes: number;
}

export interface BackupOptions {
  /** The archive's path; written beside it under a temporary name, then renamed. */
  output: string;
  withoutTelemetry: boolean;
  dataDir: string;
  /** The environment: a key set there (SECRET_KEY, TUNNEL_HOST_KEY) is not DATA_DIR's file. */
  env: Record<string, string | undefined>;
  outpostVersion: string;
  progress?: (progress: BackupProgress) => void;
}

function countNewlines(bytes: Uint8Array): number {
  let count = 0;
  for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) count++;
  return count;
}

/** DATA_DIR's keys: the files' bytes, or a note that the environment supplies the key. */
function readKeys(options: BackupOptions) {
  const keys: Manifest["keys"] = {};
  const files: { name: KeyFile; bytes: Uint8Array }[] = [];
  for (const [name, variable] of Object.entries(KEY_FILES) as [KeyFile, string][]) {
    if (options.env[variable]) {
      keys[name] = "environment";
      continue;
    }
    const file = path.join(options.dataDir, name);
    if (!existsSync(file))
      throw new BackupError(
        "missing_key",
        `${file} does not exist and ${variable} is not set: run the backup with the DATA_DIR of the Outpost it backs up`,
      );
    keys[name] = "archive";
    files.push({ name, bytes: readFileSync(file) });
  }
  return { keys, files };
}

/**
 * Streams one table's rows (COPY text format) into entries of at most PART_BYTES. Rows are taken as
 * they arrive and a full part is compressed synchronously (./archive-writer.ts): memory stays bounded.
 */
async function dumpTable(
  tx: TransactionSql,
  writer: ArchiveWriter,
  table: CatalogTable,
  order: number,
  onRows: (rows: number) => void,
): Promise<ArchiveTable> {
  const columns = tx(table.columns);
  // A partitioned table is read through a query (COPY of the parent alone would refuse): every partition.
  const source = table.partitioned
    ? tx`(select ${columns} from ${tx(table.name)})`
    : tx`${tx(table.name)} (${columns})`;
  const stream = await tx`copy ${source} to stdout`.readable();
  const parts: string[] = [];
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let rows = 0;
  const flush = () => {
    if (pendingBytes === 0) return;
    const name = `db/${String(order).padStart(3, "0")}-${table.name}.${String(parts.length).padStart(6, "0")}.copy`;
    writer.entry(name, Buffer.concat(pending, pendingBytes));
    parts.push(name);
    pending = [];
    pendingBytes = 0;
  };
  await new Promise<void>((resolve, reject) => {
    stream.on("data", (chunk: Uint8Array) => {
      rows += countNewlines(chunk);
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes >= PART_BYTES) {
        try {
          flush();
          onRows(rows);
        } catch (error) {
          stream.destroy(error as Error);
        }
      }
    });
    stream.once("end", resolve);
    stream.once("error", reject);
  });
  flush();
  const dumped: ArchiveTable = { name: table.name, columns: table.columns, rows, parts };
  if (table.partitioned) dumped.partitions = await dailyPartitions(tx, table.name);
  return dumped;
}

/**
 * Writes a backup archive of a running Outpost: every table of its schema read in one REPEATABLE READ
 * READ ONLY transaction (one snapshot, however many heartbeats arrive meanwhile), DATA_DIR's keys, and
 * the manifest last. See docs/operations.md, "Backups".
 */
export async function createBackup(sql: Sql, options: BackupOptions): Promise<Manifest> {
  const keys = readKeys(options);
  const writer = new ArchiveWriter(options.output);
  try {
    const manifest = await sql.begin("isolation level repeatable read read only", async (tx) => {
      const [server] = await tx<{ version: string }[]>`select current_setting('server_version') as version`;
      const migration = await databaseLevel(tx, await buildMigrations());
      const skipped = new Set<string>(options.withoutTelemetry ? TELEMETRY_HISTORY_TABLES : []);
      const catalog = (await listTables(tx)).filter((t) => !skipped.has(t.name));
      const tables: ArchiveTable[] = [];
      for (const [index, table] of catalog.entries()) {
        const report = (rows: number) =>
          options.progress?.({
            table: table.name,
            done: index,
            total: catalog.length,
            rows,
            bytes: writer.bytesWritten,
          });
        report(0);
        tables.push(await dumpTable(tx, writer, table, index, report));
      }
      options.progress?.({
        table: "",
        done: catalog.length,
        total: catalog.length,
        rows: 0,
        bytes: writer.bytesWritten,
      });
      return {
        format: "outpost-backup" as const,
        format_version: ARCHIVE_FORMAT_VERSION,
        created_at: new Date().toISOString(),
        outpost_version: options.outpostVersion,
        postgres_version: server!.version,
        migration,
        telemetry: !options.withoutTelemetry,
        tables,
        sequences: await sequenceStates(tx),
        keys: keys.keys,
        files: [] as Manifest["files"],
      };
    });
    for (const key of keys.files) writer.entry(`data/${key.name}`, key.bytes);
    manifest.files = [...writer.files];
    const text = new TextEncoder().encode(`${JSON.stringify(manifest, null, 2)}\n`);
    writer.entry(MANIFEST_ENTRY, text);
    writer.finish();
    return manifest;
  } catch (error) {
    writer.abort();
    throw error;
  }
}
