import { afterAll } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { connectDatabase, type Database, MIGRATIONS_DIR } from "../../modules/platform/database";
import { clusterUrl, databaseUrl, TEMPLATE_DATABASE } from "./cluster";

export interface TestDatabase extends Database {
  name: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database for the calling test file, dropped after the file's tests (or by
 * whoever passes `{ dropAfterAll: false }` and calls drop() itself). `migratedThrough: N` stops after
 * migration N, as an install from before the next one was: an upgrade test then inserts what such an
 * install held and runs applyMigrations.
 */
export async function createTestDatabase(
  options: { dropAfterAll?: boolean; migratedThrough?: number } = {},
): Promise<TestDatabase> {
  const name = `test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = postgres(clusterUrl(), { max: 1, onnotice: () => {} });
  const upTo = options.migratedThrough;
  await admin.unsafe(`create database ${name}${upTo === undefined ? ` template ${TEMPLATE_DATABASE}` : ""}`);
  await admin.end();
  const database = connectDatabase(databaseUrl(name), 10);
  if (upTo !== undefined) await migrateThrough(database, upTo);
  const drop = async () => {
    await database.close();
    const cleanup = postgres(clusterUrl(), { max: 1, onnotice: () => {} });
    await cleanup.unsafe(`drop database if exists ${name} with (force)`);
    await cleanup.end();
  };
  if (options.dropAfterAll !== false) afterAll(drop);
  return Object.assign(database, { name, drop });
}

/** Applies the committed migrations up to and including journal entry `last`. */
async function migrateThrough(database: Database, last: number) {
  const folder = mkdtempSync(path.join(tmpdir(), "outpost-migrations-"));
  try {
    cpSync(MIGRATIONS_DIR, folder, { recursive: true });
    const journalFile = path.join(folder, "meta/_journal.json");
    const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: { idx: number }[] };
    journal.entries = journal.entries.filter((entry) => entry.idx <= last);
    writeFileSync(journalFile, JSON.stringify(journal));
    await migrate(database.db, { migrationsFolder: folder });
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
