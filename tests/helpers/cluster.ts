import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { migrateJobQueue } from "../../modules/jobs/runner";
import { applyMigrations, connectDatabase } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { createLogger } from "../../modules/platform/logger";

export const TEMPLATE_DATABASE = "outpost_template";

/** URL of the test cluster's maintenance database, set by the preload. */
export function clusterUrl(): string {
  const url = process.env.OUTPOST_TEST_CLUSTER_URL;
  if (!url) throw new Error("tests/helpers/preload.ts did not run (bunfig.toml preload)");
  return url;
}

export function databaseUrl(name: string): string {
  const url = new URL(clusterUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Starts (or reuses TEST_DATABASE_URL's) PostgreSQL and builds the migrated template database. From the
 * moment it runs until `stop()`, whatever ends this process (an error building the template, a signal
 * handler's exit) takes a PostgreSQL it started down with it.
 */
export async function startTestCluster(): Promise<{ url: string; stop(): Promise<void> }> {
  let url = process.env.TEST_DATABASE_URL;
  let stop = async () => {};
  if (!url) {
    // mkdtemp's own directory (not a subfolder) so the postgres user can own it.
    const directory = mkdtempSync(path.join(tmpdir(), "outpost-test-pg-"));
    chmodSync(directory, 0o700);
    const cluster = await startEmbeddedPostgres({ directory, ephemeral: true });
    url = cluster.url;
    const killOnExit = () => {
      try {
        if (cluster.pid) process.kill(cluster.pid, "SIGQUIT");
      } catch {
        // already stopped
      }
    };
    process.on("exit", killOnExit);
    stop = async () => {
      await cluster.stop();
      process.off("exit", killOnExit);
      for (const suffix of ["", ".password", ".log", ".owner"])
        rmSync(`${directory}${suffix}`, { recursive: true, force: true });
    };
  }
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${TEMPLATE_DATABASE} with (force)`);
  await admin.unsafe(`create database ${TEMPLATE_DATABASE}`);
  await admin.end();
  const templateUrl = new URL(url);
  templateUrl.pathname = `/${TEMPLATE_DATABASE}`;
  const template = connectDatabase(templateUrl.toString(), 2);
  await applyMigrations(template);
  await migrateJobQueue(templateUrl.toString(), createLogger("silent"));
  await template.close();
  return { url, stop };
}
