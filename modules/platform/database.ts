import path from "node:path";
import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres, { type TransactionSql } from "postgres";
import * as schema from "../schema";

export type Db = PostgresJsDatabase<typeof schema>;
export type Sql = postgres.Sql;

export interface Database {
  url: string;
  sql: Sql;
  db: Db;
  close(): Promise<void>;
}

export function connectDatabase(url: string, max = 10): Database {
  const sql = postgres(url, { max, onnotice: () => {}, connection: { application_name: "outpost" } });
  const db = drizzle(sql, { schema });
  return { url, sql, db, close: () => sql.end({ timeout: 5 }) };
}

const JSON_TEXT_SEPARATOR = "\u001e";

/**
 * JSON texts as one parameter, joined by U+001E (which JSON.stringify always escapes, so it never occurs
 * inside one), split back into a text[] by PostgreSQL: a text[] parameter would be escaped character
 * by character on the way (a tenth of a heartbeat's server time). Texts must come from JSON.stringify.
 */
export function jsonTextsParam(sql: Sql | TransactionSql, texts: string[]) {
  return sql`string_to_array(${texts.join(JSON_TEXT_SEPARATOR)}::text, ${JSON_TEXT_SEPARATOR}::text)`;
}
export const MIGRATIONS_DIR = path.resolve(import.meta.dir, "../../migrations");
const MIGRATION_LOCK = 7_401_001; // arbitrary, constant: serialises concurrent starts

/** Applies pending migrations; safe when several processes start at once. */
export async function applyMigrations(database: Database): Promise<void> {
  // The lock is held on one reserved connection while drizzle migrates on another.
  const lock = await database.sql.reserve();
  try {
    await lock`select pg_advisory_lock(${MIGRATION_LOCK})`;
    await migrate(database.db, { migrationsFolder: MIGRATIONS_DIR });
  } finally {
    await lock`select pg_advisory_unlock(${MIGRATION_LOCK})`.catch(() => {});
    lock.release();
  }
}

/** True when every committed migration has been applied to this database. */
export async function migrationsApplied(database: Database): Promise<boolean> {
  const journal = (await Bun.file(path.join(MIGRATIONS_DIR, "meta/_journal.json")).json()) as {
    entries: unknown[];
  };
  const [row] = await database.sql<{ count: number }[]>`
    select count(*)::int as count from drizzle.__drizzle_migrations`.catch(() => [{ count: -1 }]);
  return row?.count === journal.entries.length;
}

/**
 * A timestamp column read with raw postgres.js. drizzle's driver makes postgres.js hand
 * timestamps over as text ("2026-01-02 03:04:05.678+00"); this turns either form into a Date.
 */
export function pgDate(value: Date | string): Date;
export function pgDate(value: Date | string | null): Date | null;
export function pgDate(value: Date | string | null): Date | null {
  if (value === null || value instanceof Date) return value;
  return new Date(value.replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00"));
}
