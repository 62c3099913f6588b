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

export function connectDatabase(
  url: string,
  max = 10,
  options: { debug?: (statement: string) => void } = {},
): Database {
  const debug = options.debug;
  const sql = postgres(url, {
    max,
    onnotice: () => {},
    connection: { application_name: "outpost" },
    // Tests count the statements a piece of work runs (alert evaluation's scope checks).
    ...(debug ? { debug: (_connection: number, statement: string) => debug(statement) } : {}),
  });
  const db = drizzle(sql, { schema });
  useDateTypes(sql);
  return { url, sql, db, close: () => sql.end({ timeout: 5 }) };
}

const TIMESTAMPTZ = 1184;
const TIMESTAMP = 1114;
/** Array types drizzle also switched to text; postgres.js rebuilds them from the element types on connect. */
const TIMESTAMP_ARRAYS = [1185, 1115];
const FAR_FUTURE = 8.64e15; // the largest time a Date holds

/** 'infinity' and '-infinity' as the furthest Dates, so they still compare and sort. */
function parseTimestamp(text: string): Date {
  if (text.endsWith("infinity")) return new Date(text[0] === "-" ? -FAR_FUTURE : FAR_FUTURE);
  return new Date(text);
}

/**
 * The one place the client's types are set. drizzle's driver, given the client, switches postgres.js's
 * timestamp parsing and serialising to plain text (its columns map text themselves), so raw templates
 * would read "2026-01-02 03:04:05.678+00" and refuse Date parameters. After it: timestamptz reads as a
 * Date (drizzle's timestamp columns in mode "date", the only mode the schema uses, take a Date as it
 * is); timestamp without time zone is read as UTC; Date parameters are sent as ISO 8601 and text passes
 * through (drizzle sends ISO text). `date` columns stay "YYYY-MM-DD" text: a calendar day is not an
 * instant. JSON keeps postgres.js's own parsing.
 */
function useDateTypes(sql: Sql): void {
  const { parsers, serializers } = sql.options;
  const serialize = (value: unknown) => (value instanceof Date ? value.toISOString() : String(value));
  parsers[TIMESTAMPTZ] = parseTimestamp;
  parsers[TIMESTAMP] = (text: string) => parseTimestamp(text.endsWith("infinity") ? text : `${text}Z`);
  serializers[TIMESTAMPTZ] = serialize;
  serializers[TIMESTAMP] = serialize;
  for (const oid of TIMESTAMP_ARRAYS) {
    delete parsers[oid];
    delete serializers[oid];
  }
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
