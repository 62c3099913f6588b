import { afterAll } from "bun:test";
import postgres from "postgres";
import { connectDatabase, type Database } from "../../modules/platform/database";
import { clusterUrl, databaseUrl, TEMPLATE_DATABASE } from "./cluster";

export interface TestDatabase extends Database {
  name: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database for the calling test file, dropped after the file's tests (or by
 * whoever passes `{ dropAfterAll: false }` and calls drop() itself).
 */
export async function createTestDatabase(options: { dropAfterAll?: boolean } = {}): Promise<TestDatabase> {
  const name = `test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = postgres(clusterUrl(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name} template ${TEMPLATE_DATABASE}`);
  await admin.end();
  const database = connectDatabase(databaseUrl(name), 10);
  const drop = async () => {
    await database.close();
    const cleanup = postgres(clusterUrl(), { max: 1, onnotice: () => {} });
    await cleanup.unsafe(`drop database if exists ${name} with (force)`);
    await cleanup.end();
  };
  if (options.dropAfterAll !== false) afterAll(drop);
  return Object.assign(database, { name, drop });
}
