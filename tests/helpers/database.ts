import { afterAll } from "bun:test";
import postgres from "postgres";
import { connectDatabase, type Database } from "../../modules/platform/database";
import { clusterUrl, databaseUrl, TEMPLATE_DATABASE } from "./cluster";

export interface TestDatabase extends Database {
  name: string;
}

/** A fresh, migrated database for the calling test file, dropped after the file's tests. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = postgres(clusterUrl(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name} template ${TEMPLATE_DATABASE}`);
  await admin.end();
  const database = connectDatabase(databaseUrl(name), 10);
  afterAll(async () => {
    await database.close();
    const cleanup = postgres(clusterUrl(), { max: 1, onnotice: () => {} });
    await cleanup.unsafe(`drop database if exists ${name} with (force)`);
    await cleanup.end();
  });
  return Object.assign(database, { name });
}
