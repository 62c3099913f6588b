import { readFileSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import type { Manifest } from "../modules/backup/model";
import { loadConfig, storageConfig } from "../modules/platform/config";
import { createLogger } from "../modules/platform/logger";
import { example } from "./help";

const VERSION = (
  JSON.parse(readFileSync(path.resolve(import.meta.dir, "../package.json"), "utf8")) as { version: string }
).version;

/** One line that rewrites itself, on a terminal only (a timer's log gets the summary alone). */
function progressLine(): { update(text: string): void; done(): void } {
  if (!process.stderr.isTTY) return { update() {}, done() {} };
  let last = 0;
  return {
    update(text) {
      if (Date.now() - last < 100) return;
      last = Date.now();
      process.stderr.write(`\r\u001b[2K${text}`);
    },
    done: () => process.stderr.write("\r\u001b[2K"),
  };
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

function defaultName(): string {
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `outpost-backup-${stamp}.tar.gz`;
}

function summary(manifest: Manifest): string {
  const rows = manifest.tables.reduce((sum, t) => sum + t.rows, 0);
  const devices = manifest.tables.find((t) => t.name === "devices")?.rows ?? 0;
  return `${manifest.tables.length} tables, ${rows} rows (${devices} devices), migration ${manifest.migration.count}`;
}

export function registerBackupCommands(program: Command): void {
  example(
    program
      .command("backup")
      .description(
        "write a backup archive of the running (or stopped) Outpost: its database and DATA_DIR's keys (docs/operations.md)",
      )
      .option("--output <file>", "the archive to write (default ./outpost-backup-<UTC time>.tar.gz)")
      .option("--without-telemetry", "leave telemetry history out: a small, fast backup"),
    "./outpost backup --output /var/backups/outpost/nightly.tar.gz",
  ).action(async (options: { output?: string; withoutTelemetry?: boolean }) => {
    const config = loadConfig();
    const logger = createLogger(config.logLevel === "info" ? "warn" : config.logLevel, {}, config.logFormat);
    const output = path.resolve(options.output ?? defaultName());
    const progress = progressLine();
    const started = Date.now();
    // Loaded here, not for `--help` (main.ts says why).
    const [{ createBackup }, { withDatabase }] = await Promise.all([
      import("../modules/backup/service"),
      import("./database"),
    ]);
    const manifest = await withDatabase(
      config,
      logger,
      (database) =>
        createBackup(database.sql, {
          output,
          withoutTelemetry: options.withoutTelemetry === true,
          dataDir: config.dataDir,
          env: process.env,
          outpostVersion: VERSION,
          progress: (p) =>
            progress.update(
              p.table
                ? `backup: table ${p.done + 1}/${p.total} ${p.table} (${p.rows} rows), ${mib(p.bytes)} written`
                : `backup: ${p.total} tables, ${mib(p.bytes)} written`,
            ),
        }),
      { migrate: false },
    ).finally(() => progress.done());
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    process.stdout.write(`${output}\n`);
    process.stderr.write(`Backup written in ${seconds} s: ${summary(manifest)}.\n`);
    for (const [key, where] of Object.entries(manifest.keys))
      if (where === "environment")
        process.stderr.write(
          `Note: ${key} comes from the environment and is not in the archive: keep it too.\n`,
        );
  });

  example(
    program
      .command("restore")
      .description(
        "restore a backup archive into an empty DATA_DIR or an empty DATABASE_URL database (Outpost stopped)",
      )
      .argument("<file>", "the archive written by `outpost backup`")
      .option("--force", "replace what the target DATA_DIR / database already holds"),
    "DATA_DIR=/var/lib/outpost ./outpost restore /var/backups/outpost/nightly.tar.gz",
  ).action(async (file: string, options: { force?: boolean }) => {
    const { dataDir, databaseUrl } = storageConfig();
    const logger = createLogger(process.env.LOG_LEVEL ?? "warn", {}, "pretty");
    const progress = progressLine();
    const started = Date.now();
    const { restoreBackup } = await import("../modules/backup/service");
    const manifest = await restoreBackup({
      file: path.resolve(file),
      dataDir,
      databaseUrl,
      force: options.force === true,
      version: VERSION,
      logger,
      progress: (p) =>
        progress.update(
          p.table ? `restore: table ${p.done + 1}/${p.total} ${p.table}` : "restore: committing",
        ),
    }).finally(() => progress.done());
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    process.stderr.write(
      `Restored in ${seconds} s: ${summary(manifest)}, from Outpost ${manifest.outpost_version} (${manifest.created_at}).\n`,
    );
    for (const [key, where] of Object.entries(manifest.keys))
      if (where === "environment")
        process.stderr.write(`Note: ${key} was set by the environment when backed up: set it again.\n`);
  });
}
