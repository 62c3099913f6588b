import path from "node:path";
import { migrateJobQueue } from "../modules/jobs/service";
import type { Config } from "../modules/platform/config";
import { applyMigrations, connectDatabase, type Database } from "../modules/platform/database";
import { startEmbeddedPostgres } from "../modules/platform/embedded-postgres";
import type { Logger } from "../modules/platform/logger";

/**
 * Runs `work` against Outpost's database: DATABASE_URL, the embedded PostgreSQL a running server
 * already started on this DATA_DIR, or a temporary start of it (stopped again afterwards).
 */
export async function withDatabase<T>(
  config: Config,
  logger: Logger,
  work: (database: Database) => Promise<T>,
  /** `migrate: false`: leave the database at its level (a backup only reads). */
  options: { migrate?: boolean } = {},
): Promise<T> {
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({ directory: path.join(config.dataDir, "postgres"), adoptOrphan: false });
  const url = config.databaseUrl ?? embedded!.url;
  const database = connectDatabase(url, 2);
  try {
    if (options.migrate !== false) {
      await applyMigrations(database);
      await migrateJobQueue(url, logger);
    }
    return await work(database);
  } finally {
    await database.close();
    if (embedded?.owned) await embedded.stop();
  }
}
