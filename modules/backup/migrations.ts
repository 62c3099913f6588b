import path from "node:path";
import { readMigrationFiles } from "drizzle-orm/migrator";
import type { TransactionSql } from "postgres";
import { MIGRATIONS_DIR, type Sql } from "../platform/database";

export interface Migration {
  tag: string;
  /** The journal's `when`: drizzle applies a migration when it is later than the last applied one's. */
  at: number;
  hash: string;
  statements: string[];
}

export interface MigrationLevel {
  count: number;
  last_at: number;
  last_tag: string | null;
}

/** This build's migrations, in order. */
export async function buildMigrations(): Promise<Migration[]> {
  const journal = (await Bun.file(path.join(MIGRATIONS_DIR, "meta/_journal.json")).json()) as {
    entries: { tag: string }[];
  };
  return readMigrationFiles({ migrationsFolder: MIGRATIONS_DIR }).map((m, i) => ({
    tag: journal.entries[i]!.tag,
    at: m.folderMillis,
    hash: m.hash,
    statements: m.sql,
  }));
}

/** The level a database is at (drizzle's own table), named with this build's tag when it knows it. */
export async function databaseLevel(sql: Sql | TransactionSql, known: Migration[]): Promise<MigrationLevel> {
  const [row] = await sql<{ count: number; last_at: string | null }[]>`
    select count(*)::int as count, max(created_at)::text as last_at from drizzle.__drizzle_migrations`;
  const lastAt = Number(row?.last_at ?? 0);
  return {
    count: row?.count ?? 0,
    last_at: lastAt,
    last_tag: known.find((m) => m.at === lastAt)?.tag ?? null,
  };
}

/**
 * Applies `migrations` inside the caller's transaction, recording each as drizzle's migrator does
 * (schema `drizzle`, table `__drizzle_migrations`), so `./outpost start` sees them applied. drizzle's
 * own migrator commits on its own; a restore needs its migrations, rows and sequences in one transaction.
 */
export async function applyInTransaction(tx: TransactionSql, migrations: Migration[]): Promise<void> {
  await tx`create schema if not exists drizzle`;
  await tx`create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`;
  for (const migration of migrations) {
    for (const statement of migration.statements) await tx.unsafe(statement);
    await tx`insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.at})`;
  }
}
