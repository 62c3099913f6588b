// A backup taken while devices register and send heartbeats is one snapshot: restored, it holds no
// telemetry row without its device, and every table holds exactly the rows the manifest counted.
// (Telemetry has no foreign key to devices; only the snapshot keeps them together. Read table by
// table, a device registered after `devices` was read whose heartbeat lands before `telemetry_events`
// is read would leave its telemetry behind without it: the job runs seeded here make that window
// wide, as a busy server's tables would.)
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createBackup, restoreBackup } from "../../modules/backup/service";
import { connectDatabase } from "../../modules/platform/database";
import { createLogger } from "../../modules/platform/logger";
import { approvedDevice, heartbeatUrl, json, sampleHeartbeat } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { emptyDatabase } from "./helpers";

const app = await startTestApp();
const root = mkdtempSync(path.join(tmpdir(), "outpost-backup-consistency-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Registers approved devices and sends one heartbeat each, one after another, until `stop` resolves. */
async function fleetArriving(stop: Promise<unknown>): Promise<number> {
  let done = false;
  void stop.finally(() => {
    done = true;
  });
  let devices = 0;
  for (let i = 0; i < 2000 && !done; i++) {
    const device = await approvedDevice(app);
    const beat = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    expect(beat.status).toBe(200);
    devices++;
  }
  return devices;
}

describe("a backup during heartbeats", () => {
  test("restores to the snapshot: no telemetry without its device, counts as the manifest says", async () => {
    const { sql } = app.database;
    for (let i = 0; i < 20; i++) {
      const device = await approvedDevice(app);
      await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    }
    // Read between `devices` and `telemetry_events` (tables go in name order after what they reference).
    await sql`insert into job_runs (job_id, task_identifier, attempt, status, worker_id)
      select g::text, 'telemetry_rollup', 1, 'succeeded', 'seed' from generate_series(1, 300000) g`;
    const output = path.join(root, "during.tar.gz");
    const backup = createBackup(sql, {
      output,
      withoutTelemetry: false,
      dataDir: app.config.dataDir,
      env: { SECRET_KEY: app.config.secretKey },
      outpostVersion: "test",
    });
    const [manifest, arrived] = await Promise.all([backup, fleetArriving(backup)]);
    expect(arrived).toBeGreaterThan(0);
    const [live] = await sql<{ n: number }[]>`select count(*)::int as n from devices`;
    const dumped = manifest.tables.find((t) => t.name === "devices")!.rows;
    // Devices arrived while the snapshot was read, and some of them after it was taken.
    expect(live!.n).toBeGreaterThan(dumped);

    const target = await emptyDatabase();
    await restoreBackup({
      file: output,
      dataDir: path.join(root, "restored"),
      databaseUrl: target.url,
      force: false,
      version: "test",
      logger: createLogger("silent"),
    });
    const restored = connectDatabase(target.url, 2);
    try {
      const [orphans] = await restored.sql<{ n: number }[]>`
        select count(*)::int as n from telemetry_events t
        where not exists (select 1 from devices d where d.id = t.device_id)`;
      expect(orphans!.n).toBe(0);
      const counts: Record<string, number> = {};
      for (const table of manifest.tables) {
        const [row] = await restored.sql<
          { n: number }[]
        >`select count(*)::int as n from ${restored.sql(table.name)}`;
        counts[table.name] = row!.n;
      }
      expect(counts).toEqual(Object.fromEntries(manifest.tables.map((t) => [t.name, t.rows])));
      expect(counts.devices).toBe(dumped);
      expect(counts.telemetry_events).toBeGreaterThanOrEqual(20);
    } finally {
      await restored.close();
    }
  }, 180_000);

  test("--without-telemetry leaves telemetry history out and restores the rest", async () => {
    const output = path.join(root, "small.tar.gz");
    const manifest = await createBackup(app.database.sql, {
      output,
      withoutTelemetry: true,
      dataDir: app.config.dataDir,
      env: { SECRET_KEY: app.config.secretKey },
      outpostVersion: "test",
    });
    expect(manifest.telemetry).toBe(false);
    const names = manifest.tables.map((t) => t.name);
    expect(names).toContain("devices");
    expect(names.filter((n) => n.startsWith("telemetry_"))).toEqual(["telemetry_schemas"]);
    const target = await emptyDatabase();
    await restoreBackup({
      file: output,
      dataDir: path.join(root, "restored-small"),
      databaseUrl: target.url,
      force: false,
      version: "test",
      logger: createLogger("silent"),
    });
    const restored = connectDatabase(target.url, 2);
    try {
      const [row] = await restored.sql<{ devices: number; telemetry: number }[]>`
        select (select count(*)::int from devices) as devices, (select count(*)::int from telemetry_events) as telemetry`;
      expect(row).toEqual({ devices: manifest.tables.find((t) => t.name === "devices")!.rows, telemetry: 0 });
    } finally {
      await restored.close();
    }
  }, 120_000);
});
