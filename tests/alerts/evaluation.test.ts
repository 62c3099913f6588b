import { afterAll, describe, expect, test } from "bun:test";
import path from "node:path";
import alertsRetentionJob from "../../jobs/alerts-retention";
import { evaluateAlerts } from "../../modules/alerts/evaluation";
import { changeStatus, deleteExpiredAlerts } from "../../modules/alerts/lifecycle";
import { checkOfflineDevices } from "../../modules/alerts/offline";
import { createRule } from "../../modules/alerts/rules";
import { recordTelemetry } from "../../modules/telemetry/service";
import { startTestApp } from "../helpers/app";
import { markSeen } from "../helpers/seen";
import { beat, openAlerts, rewindCursor, sensorDevice, sensorPayload } from "./helpers";

// Web role only: evaluation runs when the test calls it, so each step is deterministic.
const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());
const sql = app.database.sql;
// Negative settle: read up to "now" even with the database clock a few microseconds ahead of ours.
const evaluate = () => evaluateAlerts(sql, app.config, { settleMs: -5000 });

/** Events written with past times arrive "late": read again from 30 minutes back (states skip repeats). */
const replay = async () => {
  await rewindCursor(sql);
  await evaluate();
};

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

describe("evaluation", () => {
  test("a breach opens one alert per (device, rule) episode; retries add none; recovery auto-resolves", async () => {
    const device = await sensorDevice(app, "ev-basic");
    const rule = await createRule(sql, {
      name: "Hot",
      product_name: "ev-basic",
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "50",
      resolve_after_minutes: 0,
      severity: "critical",
    });
    await beat(app, device, { temp: 40 });
    await evaluate();
    expect(await openAlerts(sql, device.id)).toEqual([]);

    await beat(app, device, { temp: 55 });
    await beat(app, device, { temp: 60 });
    await evaluate();
    await rewindCursor(sql); // a retried run re-reads the same events
    await evaluate();
    const [alert, ...more] = await openAlerts(sql, device.id);
    expect(more).toEqual([]);
    expect(alert).toMatchObject({ type: "threshold", status: "active", rule_id: rule.id });
    expect(alert!.message).toBe("Rule Breach: sensor.temp > 50");

    await beat(app, device, { temp: 20 });
    await evaluate();
    expect((await openAlerts(sql, device.id)).map((a) => a.status)).toEqual(["resolved"]);

    // A new episode is a new alert.
    await beat(app, device, { temp: 70 });
    await evaluate();
    expect((await openAlerts(sql, device.id)).map((a) => a.status)).toEqual(["resolved", "active"]);
  });

  test("`for` holds the alert back until the condition held that long; hysteresis needs the clear threshold", async () => {
    const device = await sensorDevice(app, "ev-for");
    await createRule(sql, {
      name: "Hot for 3 min",
      product_name: "ev-for",
      condition_field: "sensor.temp",
      operator: ">=",
      threshold_value: "50",
      clear_threshold: "40",
      for_minutes: 3,
      resolve_after_minutes: 1,
    });
    await recordTelemetry(sql, device.id, await sensorPayload(device, { temp: 51 }), minutesAgo(5));
    await recordTelemetry(sql, device.id, await sensorPayload(device, { temp: 52 }), minutesAgo(3.5));
    await replay();
    expect(await openAlerts(sql, device.id)).toEqual([]);
    await recordTelemetry(sql, device.id, await sensorPayload(device, { temp: 53 }), minutesAgo(1.9));
    await replay();
    expect((await openAlerts(sql, device.id)).map((a) => a.status)).toEqual(["active"]);
    // 45 is below the threshold but above the clear threshold: not recovered.
    await recordTelemetry(sql, device.id, await sensorPayload(device, { temp: 45 }), minutesAgo(1.8));
    await recordTelemetry(sql, device.id, await sensorPayload(device, { temp: 45 }), minutesAgo(0.5));
    await replay();
    expect((await openAlerts(sql, device.id)).map((a) => a.status)).toEqual(["active"]);
    // Recovered 0.4 min ago: not yet clear for the 1 minute auto-resolve needs.
    await recordTelemetry(sql, device.id, await sensorPayload(device, { temp: 30 }), minutesAgo(0.4));
    await recordTelemetry(
      sql,
      device.id,
      await sensorPayload(device, { temp: 31 }),
      new Date(Date.now() + 0),
    );
    await replay();
    expect((await openAlerts(sql, device.id)).map((a) => a.status)).toEqual(["active"]);
    // Clear for 2 minutes by the next heartbeat: resolved.
    await sql`update alert_rule_states set clear_since = clear_since - interval '2 minutes'`;
    await beat(app, device, { temp: 30 });
    await replay();
    expect((await openAlerts(sql, device.id)).map((a) => a.status)).toEqual(["resolved"]);
  });

  test("scope: a rule listing devices ignores the others; disabled rules and unapproved devices are silent", async () => {
    const a = await sensorDevice(app, "ev-scope");
    const b = await sensorDevice(app, "ev-scope");
    await createRule(sql, {
      name: "Only A",
      product_name: "ev-scope",
      condition_field: "sensor.state",
      operator: "contains",
      threshold_value: "fail",
      device_ids: [a.id],
    });
    await createRule(sql, {
      name: "Disabled",
      product_name: "ev-scope",
      condition_field: "sensor.state",
      operator: "is",
      threshold_value: "failed",
      enabled: false,
    });
    await beat(app, a, { state: "failed" });
    await beat(app, b, { state: "failed" });
    await evaluate();
    expect((await openAlerts(sql, a.id)).length).toBe(1);
    expect(await openAlerts(sql, b.id)).toEqual([]);
  });

  test("offline: silent approved devices get one alert; the next heartbeat resolves it", async () => {
    const device = await sensorDevice(app, "ev-offline");
    await beat(app, device, { temp: 1 });
    await evaluate();
    await markSeen(sql, device.id, 660);
    await checkOfflineDevices(sql, app.config);
    await checkOfflineDevices(sql, app.config);
    const [alert, ...more] = await openAlerts(sql, device.id);
    expect(more).toEqual([]);
    expect(alert).toMatchObject({
      type: "offline",
      status: "active",
      message: "Device hasn't reported in 10 minutes",
    });
    await beat(app, device, { temp: 2 });
    await evaluate();
    expect(await openAlerts(sql, device.id)).toMatchObject([
      { type: "offline", status: "resolved", message: "Device heartbeat resumed" },
    ]);
  });

  test("acknowledge then resolve by hand records who and when; retention deletes old resolved alerts", async () => {
    const device = await sensorDevice(app, "ev-life");
    await createRule(sql, {
      name: "Life",
      product_name: "ev-life",
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "1",
    });
    await beat(app, device, { temp: 5 });
    await evaluate();
    const [alert] = await openAlerts(sql, device.id);
    const policy = { minIntervalMinutes: 15, recipients: [], email: false, webhook: false };
    const acked = await changeStatus(
      sql,
      [alert!.id, "not-a-uuid"],
      { status: "acknowledged", note: "on it", by: "ops@example.test" },
      policy,
    );
    expect(acked[0]).toMatchObject({
      status: "acknowledged",
      acknowledgedBy: "ops@example.test",
      ackNote: "on it",
    });
    // Still open: the condition holding again opens nothing new.
    await beat(app, device, { temp: 6 });
    await evaluate();
    expect((await openAlerts(sql, device.id)).length).toBe(1);
    const resolved = await changeStatus(
      sql,
      [alert!.id],
      { status: "resolved", by: "ops@example.test" },
      policy,
    );
    expect(resolved[0]).toMatchObject({
      status: "resolved",
      resolvedBy: "ops@example.test",
      resolution: "manual",
    });
    expect(await changeStatus(sql, [alert!.id], { status: "acknowledged", by: "x" }, policy)).toEqual([]);
    await sql`update alerts set resolved_at = now() - interval '179 days' where id = ${alert!.id}::uuid`;
    expect(await deleteExpiredAlerts(sql, 180)).toBe(0);
    await sql`update alerts set resolved_at = now() - interval '181 days' where id = ${alert!.id}::uuid`;
    // The scheduled job applies ALERT_RETENTION_DAYS (180 by default).
    await alertsRetentionJob.run({}, app.services);
    expect((await sql`select id from alerts where id = ${alert!.id}::uuid`).length).toBe(0);
  });

  test("a deleted or revoked device's open alerts are resolved (device_removed), its history kept", async () => {
    const gone = await sensorDevice(app, "ev-removed");
    const revoked = await sensorDevice(app, "ev-removed");
    const kept = await sensorDevice(app, "ev-removed");
    await createRule(sql, {
      name: "Removed",
      product_name: "ev-removed",
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "1",
    });
    for (const device of [gone, revoked, kept]) await beat(app, device, { temp: 9 });
    await evaluate();
    for (const device of [gone, revoked, kept]) expect((await openAlerts(sql, device.id)).length).toBe(1);
    const operator = await app.token("operator");
    const deleted = await app.fetch(`/api/json/devices/${gone.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${operator}` },
    });
    expect(deleted.status).toBe(204);
    await sql`update devices set approval_status = 'rejected' where id = ${revoked.id}::uuid`;
    const { resolvedRemoved } = await checkOfflineDevices(sql, app.config);
    expect(resolvedRemoved).toBe(2);
    for (const device of [gone, revoked]) {
      const rows = await sql<{ status: string; resolution: string }[]>`
        select status, resolution from alerts where device_id = ${device.id}::uuid`;
      expect([...rows]).toEqual([{ status: "resolved", resolution: "device_removed" }]);
    }
    expect((await openAlerts(sql, kept.id)).map((a) => a.status)).toEqual(["active"]);
    expect((await checkOfflineDevices(sql, app.config)).resolvedRemoved).toBe(0);
  });

  test("a worker killed mid-run (SIGKILL) leaves nothing; the retry creates exactly one alert", async () => {
    const device = await sensorDevice(app, "ev-kill");
    await createRule(sql, {
      name: "Kill",
      product_name: "ev-kill",
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "1",
    });
    await beat(app, device, { temp: 9 });
    await Bun.sleep(50);
    const child = Bun.spawn([process.execPath, path.join(import.meta.dir, "kill-child.ts")], {
      env: { ...process.env, DATABASE_URL: app.database.url },
      stdout: "pipe",
      stderr: "inherit",
    });
    const reader = child.stdout.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toContain("paused");
    // The child holds an uncommitted transaction with the alert in it.
    child.kill("SIGKILL");
    await child.exited;
    expect(await openAlerts(sql, device.id)).toEqual([]);
    await evaluate();
    await rewindCursor(sql);
    await evaluate();
    expect((await openAlerts(sql, device.id)).length).toBe(1);
  });
});
