// Backups you can restore: `./outpost backup` and `./outpost restore` (docs/operations.md, "Backups").
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import postgres from "postgres";
import { migrateJobQueue } from "../jobs/service";
import type { Sql } from "../platform/database";
import { startEmbeddedPostgres } from "../platform/embedded-postgres";
import type { Logger } from "../platform/logger";
import { verifyArchive } from "./archive-reader";
import { buildMigrations } from "./migrations";
import { BackupError, type Manifest } from "./model";
import { archiveLevel, type RestoreProgress, restoreDatabase } from "./restore";

export { type BackupOptions, type BackupProgress, createBackup } from "./dump";
export { BackupError, type Manifest } from "./model";
export type { RestoreProgress } from "./restore";

export interface RestoreOptions {
  file: string;
  dataDir: string;
  /** An external PostgreSQL; unset: the embedded one in DATA_DIR/postgres (created if missing). */
  databaseUrl: string | undefined;
  /** Replace what the target holds instead of refusing. */
  force: boolean;
  version: string;
  logger: Logger;
  progress?: (progress: RestoreProgress) => void;
}

/** What already lives in the target database, if anything (Outpost's tables, its migrations, a running Outpost). */
async function inspectTarget(sql: Sql): Promise<{ tables: number; migrated: boolean; clients: number }> {
  const [row] = await sql<{ tables: number; migrated: boolean; clients: number }[]>`
    select (select count(*)::int from pg_class where relnamespace = 'public'::regnamespace and relkind in ('r', 'p')) as tables,
      to_regnamespace('drizzle') is not null as migrated,
      (select count(*)::int from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
        and application_name = 'outpost') as clients`;
  return row!;
}

/** DATA_DIR's key files the archive would write that already exist. */
function existingKeys(dataDir: string, manifest: Manifest): string[] {
  return Object.entries(manifest.keys)
    .filter(([name, where]) => where === "archive" && existsSync(path.join(dataDir, name)))
    .map(([name]) => name);
}

/** Writes the keys beside their final names first; `commit` moves them into place, `discard` removes them. */
function stageKeys(dataDir: string, keys: Map<string, Uint8Array>) {
  const staged = [...keys].map(([name, bytes]) => {
    const final = path.join(dataDir, name);
    const temp = path.join(dataDir, `.${name}.${process.pid}.restore`);
    writeFileSync(temp, bytes, { mode: 0o600 });
    return { temp, final };
  });
  return {
    commit: () => {
      for (const { temp, final } of staged) renameSync(temp, final);
    },
    discard: () => {
      for (const { temp } of staged) rmSync(temp, { force: true });
    },
  };
}

/**
 * Restores an archive into an empty target (DATA_DIR and its embedded PostgreSQL, or DATABASE_URL's
 * database): the archive is checked whole first, then the database is restored in one transaction
 * and migrated forward, and DATA_DIR's keys are moved into place last. Refusals are BackupErrors.
 */
export async function restoreBackup(options: RestoreOptions): Promise<Manifest> {
  if (!existsSync(options.file)) throw new BackupError("not_a_backup", `${options.file} does not exist`);
  const { manifest, keys } = await verifyArchive(options.file);
  const migrations = await buildMigrations();
  const level = archiveLevel(manifest, migrations, options.version);
  const clashing = existingKeys(options.dataDir, manifest);
  if (clashing.length > 0 && !options.force)
    throw new BackupError(
      "not_empty",
      `DATA_DIR (${options.dataDir}) already holds ${clashing.join(" and ")}: restore into an empty DATA_DIR, or pass --force to replace them`,
    );
  const embedded = options.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        directory: path.join(options.dataDir, "postgres"),
        adoptOrphan: false,
        log: (message) => options.logger.info(message),
      });
  try {
    if (embedded && !embedded.owned)
      throw new BackupError(
        "running",
        `Outpost is running on ${options.dataDir} (PostgreSQL pid ${embedded.pid}): stop it before restoring`,
      );
    const url = options.databaseUrl ?? embedded!.url;
    const sql = postgres(url, {
      max: 1,
      onnotice: () => {},
      connection: { application_name: "outpost-restore" },
    });
    try {
      const target = await inspectTarget(sql);
      if (target.clients > 0)
        throw new BackupError(
          "running",
          `Outpost is running on this database (${target.clients} connections): stop every Outpost process before restoring`,
        );
      if ((target.tables > 0 || target.migrated) && !options.force)
        throw new BackupError(
          "not_empty",
          `the target database is not empty (${target.tables} tables): restore into an empty database, or pass --force to replace its contents`,
        );
      await migrateJobQueue(url, options.logger);
      mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
      const staged = stageKeys(options.dataDir, keys);
      try {
        await restoreDatabase(sql as unknown as Sql, options.file, manifest, {
          migrations,
          level,
          force: options.force,
          progress: options.progress,
        });
      } catch (error) {
        staged.discard();
        if (error instanceof BackupError) throw error;
        const reason = error instanceof Error ? error.message : String(error);
        throw new BackupError(
          "failed",
          `the restore failed and was rolled back, nothing was restored: ${reason}`,
        );
      }
      staged.commit();
    } finally {
      await sql.end({ timeout: 5 });
    }
  } finally {
    if (embedded?.owned) await embedded.stop();
  }
  return manifest;
}
