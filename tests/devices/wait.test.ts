import { describe, expect, test } from "bun:test";
import postgres from "postgres";
import { queueCommand } from "../../modules/commands/service";
import { wakeDevice } from "../../modules/devices/service";
import { DeviceWaits } from "../../modules/devices/wake";
import { sha256Hex } from "../../modules/platform/crypto";
import { connectDatabase } from "../../modules/platform/database";
import { createLogger } from "../../modules/platform/logger";
import { deviceWaitsHeld } from "../../modules/platform/metrics";
import { startTestApp, type TestApp } from "../helpers/app";
import { TestClock } from "../helpers/clock";
import { clusterUrl, databaseUrl, TEMPLATE_DATABASE } from "../helpers/cluster";
import { approvedDevice, heartbeatUrl, json, newMac, register, sampleHeartbeat } from "./helpers";

// `GET /api/v1/devices/{id}/wait`: the agent's wait between polls, answered early when there is work.
const app = await startTestApp();
const sql = app.database.sql;
const operator = await app.token("operator");

/** An approved device that heartbeated just now (online, nothing pending). */
async function onlineDevice(target: TestApp = app) {
  const device = await approvedDevice(target);
  expect((await target.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()))).status).toBe(
    200,
  );
  return device;
}

/** Starts a wait; resolves its status, body and how long it was held (ms). */
function wait(id: string, query: string, target: TestApp = app) {
  const started = performance.now();
  return target.fetch(`/api/v1/devices/${id}/wait?${query}`).then(async (response) => ({
    status: response.status,
    // biome-ignore lint/suspicious/noExplicitAny: checked by the assertions
    body: (await response.json()) as any,
    ms: performance.now() - started,
  }));
}

/** Waits the app holds for a device. */
const heldWaits = (id: string, target: TestApp = app) => target.services.deviceWaits.heldFor(id);

/** Resolves once the device's waits are held (registered: a wake from now on is heard). */
async function held(id: string, count = 1, target: TestApp = app) {
  // Polled (bounded): the wait is an HTTP request on its way.
  for (let i = 0; i < 500 && heldWaits(id, target) < count; i++) await Bun.sleep(10);
  expect(heldWaits(id, target)).toBe(count);
}

/**
 * A wait that no work ends: held until the app's clock (moved on by the test) passes its timeout,
 * then answered `wake: null`.
 */
async function waitsOut(id: string, query: string, seconds: number, target: TestApp = app) {
  const pending = wait(id, query, target);
  await held(id, 1, target);
  // (The app's clock also runs in real time: the halves leave the request's own time some room.)
  await target.clock.advance((seconds * 1000) / 2);
  expect(heldWaits(id, target)).toBe(1); // not early
  await target.clock.advance((seconds * 1000) / 2);
  const result = await pending;
  // Answered as the clock passed the timeout, not by the same time passing for real.
  if (seconds >= 30) expect(result.ms).toBeLessThan(10_000);
  return result;
}

async function openLease(id: string) {
  const response = await app.fetch(`/api/v1/devices/${id}/remote_access`, {
    method: "POST",
    headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
    body: "{}",
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { data: { lease_id: string } }).data.lease_id;
}

describe("waiting for work", () => {
  test("without work the wait is held for timeout_s and answers wake: null", async () => {
    const device = await onlineDevice();
    const result = await waitsOut(device.id, `api_key=${device.token}&timeout_s=30&remote_access=0`, 30);
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ data: { wake: null } });
  });

  test("opening remote access answers a held wait at once with remote_access; ending it wakes a holder of a token", async () => {
    const device = await onlineDevice();
    const pending = wait(device.id, `api_key=${device.token}&timeout_s=30&remote_access=0`);
    await held(device.id);
    const opened = performance.now();
    const leaseId = await openLease(device.id);
    const result = await pending;
    expect(result.body).toEqual({ data: { wake: "remote_access" } });
    expect(performance.now() - opened).toBeLessThan(5_000); // not the 30 s
    // The agent now holds a token: waits hold again, until the lease ends.
    const quiet = await wait(device.id, `api_key=${device.token}&timeout_s=1&remote_access=1`);
    expect(quiet.body.data.wake).toBeNull();
    const holding = wait(device.id, `api_key=${device.token}&timeout_s=30&remote_access=1`);
    await held(device.id);
    const ended = await app.fetch(`/api/v1/devices/${device.id}/remote_access/${leaseId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${operator}` },
    });
    expect(ended.status).toBe(204);
    const after = await holding;
    expect(after.body).toEqual({ data: { wake: "remote_access" } });
    expect(after.ms).toBeLessThan(10_000);
  });

  test("a queued command answers a held wait with commands; a wait that starts with one queued answers at once", async () => {
    const device = await onlineDevice();
    const pending = wait(device.id, `api_key=${device.token}&timeout_s=30`);
    await held(device.id);
    await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: 600 });
    const result = await pending;
    expect(result.body).toEqual({ data: { wake: "commands" } });
    expect(result.ms).toBeLessThan(10_000);
    const again = await wait(device.id, `api_key=${device.token}&timeout_s=30`);
    expect(again.body).toEqual({ data: { wake: "commands" } });
    expect(again.ms).toBeLessThan(5_000);
    // The next heartbeat takes the command: the wait holds again.
    const beat = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    expect(((await beat.json()) as { data: { commands: unknown[] } }).data.commands).toHaveLength(1);
    expect((await wait(device.id, `api_key=${device.token}&timeout_s=1`)).body.data.wake).toBeNull();
  });

  test("a remote-access state other than the agent's answers at once; a wake sent by another connection (another web process) is heard", async () => {
    const device = await onlineDevice();
    const mismatch = await wait(device.id, `api_key=${device.token}&timeout_s=30&remote_access=1`);
    expect(mismatch.body).toEqual({ data: { wake: "remote_access" } });
    expect(mismatch.ms).toBeLessThan(5_000);
    const pending = wait(device.id, `api_key=${device.token}&timeout_s=30`);
    await held(device.id);
    const other = postgres(app.database.url, { max: 1, onnotice: () => {} });
    try {
      await wakeDevice(other, device.id);
    } finally {
      await other.end();
    }
    const result = await pending;
    expect(result.body).toEqual({ data: { wake: "notified" } }); // woken, but nothing to find
    expect(result.ms).toBeLessThan(10_000);
  });

  test("waits of one device: each ends on its own, a wake reaches all still held; a request that goes away is let go", async () => {
    const device = await onlineDevice();
    const gauge = async () => (await deviceWaitsHeld.get()).values[0]?.value ?? 0;
    const before = await gauge();
    const short = wait(device.id, `api_key=${device.token}&timeout_s=1`);
    const first = wait(device.id, `api_key=${device.token}&timeout_s=30`);
    const second = wait(device.id, `api_key=${device.token}&timeout_s=30`);
    await held(device.id, 3);
    expect(await gauge()).toBe(before + 3); // outpost_device_waits_held
    expect((await short).body).toEqual({ data: { wake: null } });
    expect(heldWaits(device.id)).toBe(2); // the others are still held, and still hear a wake
    await wakeDevice(sql, device.id);
    expect((await first).body).toEqual({ data: { wake: "notified" } });
    expect((await second).body).toEqual({ data: { wake: "notified" } });
    expect(heldWaits(device.id)).toBe(0);
    expect(await gauge()).toBe(before);

    const gone = new AbortController();
    const abandoned = app
      .fetch(`/api/v1/devices/${device.id}/wait?api_key=${device.token}&timeout_s=30`, {
        signal: gone.signal,
      })
      .catch((error: Error) => error.name);
    await held(device.id);
    gone.abort();
    expect(await abandoned).toBe("AbortError");
    const released = performance.now();
    while (heldWaits(device.id) > 0 && performance.now() - released < 5_000) await Bun.sleep(10);
    expect(heldWaits(device.id)).toBe(0); // not held for the 30 s
  });

  test("a command past its expiry is no work: the wait holds", async () => {
    const device = await onlineDevice();
    // Written directly: queueCommand's wake would reach this wait (as "notified") a moment later.
    await sql`insert into pending_commands (device_id, type, expires_at)
      values (${device.id}, 'list_scripts', now() - interval '1 second')`;
    const result = await waitsOut(device.id, `api_key=${device.token}&timeout_s=30`, 30);
    expect(result.body).toEqual({ data: { wake: null } });
  });

  test("once the waits are closed (shutdown), a new wait answers at once; the process's next set holds again", async () => {
    const device = await onlineDevice();
    const listeners = async () =>
      (
        await sql`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and query ilike 'listen%outpost_device_wake%'`
      )[0]!.n as number;
    const appListeners = await listeners();
    const database = connectDatabase(app.database.url, 2);
    try {
      const input = {
        deviceId: device.id,
        apiKey: device.token,
        holdsRemoteAccess: false,
        remoteAccessActive: async () => false,
        timeoutMs: 30_000,
      };
      const logger = createLogger("silent");
      const clock = new TestClock({ frozen: true });
      const waits = new DeviceWaits(database, logger, clock);
      await waits.close();
      const started = performance.now();
      expect(await waits.wait({ ...input, apiKey: "not even checked", timeoutMs: 30_000 })).toEqual({
        wake: undefined,
      });
      expect(performance.now() - started).toBeLessThan(1_000);
      // A restarted app (same database handle) gets a set of its own that holds waits again.
      const fresh = new DeviceWaits(database, logger, clock);
      const heldAt = performance.now();
      const pending = fresh.wait(input);
      for (let i = 0; i < 500 && fresh.heldFor(device.id) === 0; i++) await Bun.sleep(10);
      expect(fresh.heldFor(device.id)).toBe(1);
      await clock.advance(input.timeoutMs - 1);
      expect(fresh.heldFor(device.id)).toBe(1); // not a moment early
      await clock.advance(1);
      expect(await pending).toEqual({ wake: undefined });
      expect(performance.now() - heldAt).toBeLessThan(10_000); // the clock's 30 s, not real ones
      expect(fresh.devicesWaiting).toBe(0); // nothing kept for a device without waits
      expect(await listeners()).toBe(appListeners + 1);
      await fresh.close();
      expect(await listeners()).toBe(appListeners); // closing stops listening
      await fresh.close(); // nothing left to close: fine
    } finally {
      await database.close();
    }
  });

  test("a LISTEN that failed is tried again by the next wait, which then hears wakes", async () => {
    // A database that does not exist yet: the first wait fails (typed by PostgreSQL), then it is created.
    const name = `test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const database = connectDatabase(databaseUrl(name), 2);
    const waits = new DeviceWaits(database, createLogger("silent"), new TestClock());
    const admin = postgres(clusterUrl(), { max: 1, onnotice: () => {} });
    try {
      const input = {
        deviceId: crypto.randomUUID(),
        apiKey: "a device token",
        holdsRemoteAccess: false,
        remoteAccessActive: async () => false,
        timeoutMs: 30_000,
      };
      expect(await waits.wait(input).catch((error: Error) => error.message)).toMatch(/does not exist/);
      await admin.unsafe(`create database ${name} template ${TEMPLATE_DATABASE}`);
      const [device] = await database.sql<
        { id: string }[]
      >`insert into devices (mac_address, approval_status, api_token_hash)
        values (${newMac()}, 'approved', ${sha256Hex(input.apiKey)}) returning id`;
      const pending = waits.wait({ ...input, deviceId: device!.id });
      for (let i = 0; i < 500 && waits.heldFor(device!.id) === 0; i++) await Bun.sleep(10);
      const started = performance.now();
      await wakeDevice(database.sql, device!.id);
      expect(await pending).toEqual({ wake: "notified" });
      expect(performance.now() - started).toBeLessThan(5_000); // heard, not the 30 s
    } finally {
      await waits.close();
      await database.close();
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });

  test("the flag left set by an expired lease (until the sweep) does not answer at once: its heartbeat gives no token", async () => {
    // The state the sweep finds: a lease past its expiry, the flag still set. Written directly, so no
    // wake from opening the lease is still on its way to this wait. The app's own sweep (every 30 s)
    // may end that lease during the wait and wake the device, rightly: then the state is set again.
    for (let attempt = 1; ; attempt++) {
      const device = await onlineDevice();
      const leaseId = Bun.randomUUIDv7();
      await sql`update devices set remote_access_requested = true where id = ${device.id}`;
      await sql`insert into remote_access_leases (id, device_id, owner_kind, holder, expires_at, max_expires_at)
        values (${leaseId}, ${device.id}, 'api', 'test', now() - interval '1 second', now() + interval '1 hour')`;
      const result = await waitsOut(device.id, `api_key=${device.token}&timeout_s=1&remote_access=0`, 1);
      const [lease] = await sql<{ ended: boolean }[]>`
        select end_reason is not null as ended from remote_access_leases where id = ${leaseId}`;
      if (lease!.ended && attempt < 3) continue;
      expect(result.body).toEqual({ data: { wake: null } });
      break;
    }
  });

  test("the device's credentials are checked as for a heartbeat, and a bad query is a typed 400", async () => {
    const device = await onlineDevice();
    const pendingDevice = (await register(app)).body;
    const cases: [string, string, number, string][] = [
      ["00000000-0000-4000-8000-000000000000", `api_key=${device.token}`, 404, "device_not_found"],
      ["not-a-uuid", `api_key=${device.token}`, 404, "device_not_found"],
      [device.id, "", 401, "missing_api_key"],
      [device.id, "api_key=wrong-token", 401, "invalid_api_key"],
      [pendingDevice.data.id, "api_key=anything", 403, "device_not_approved"],
      [device.id, `api_key=${device.token}&timeout_s=0`, 400, "invalid_request"],
      [device.id, `api_key=${device.token}&timeout_s=1.5`, 400, "invalid_request"],
      [device.id, `api_key=${device.token}&remote_access=yes`, 400, "invalid_request"],
    ];
    for (const [id, query, status, code] of cases) {
      const result = await wait(id, query.includes("timeout_s") ? query : `${query}&timeout_s=1`);
      expect(`${id} ${query}: ${result.status} ${result.body.error?.code}`).toBe(
        `${id} ${query}: ${status} ${code}`,
      );
    }
    const field = await wait(device.id, `api_key=${device.token}&timeout_s=x`);
    expect(field.body.error.details).toEqual({ field: "timeout_s" });
  });

  test("the server caps the wait at DEVICE_WAIT_MAX_SECONDS (0: answers at once), and answers held waits when it stops", async () => {
    const capped = await startTestApp({ DEVICE_WAIT_MAX_SECONDS: "1" });
    const device = await onlineDevice(capped);
    const result = await waitsOut(device.id, `api_key=${device.token}&timeout_s=50`, 1, capped);
    expect(result.body.data.wake).toBeNull();

    const off = await startTestApp({ DEVICE_WAIT_MAX_SECONDS: "0" });
    const offDevice = await onlineDevice(off);
    const immediate = await wait(offDevice.id, `api_key=${offDevice.token}&timeout_s=50`, off);
    expect(immediate.body).toEqual({ data: { wake: null } });
    expect(immediate.ms).toBeLessThan(1_000);

    const stopping = await startTestApp();
    const stoppingDevice = await onlineDevice(stopping);
    const pending = wait(stoppingDevice.id, `api_key=${stoppingDevice.token}&timeout_s=50`, stopping);
    await held(stoppingDevice.id, 1, stopping);
    const stopped = performance.now();
    await stopping.running.stop();
    expect((await pending).body).toEqual({ data: { wake: null } });
    expect(performance.now() - stopped).toBeLessThan(5_000);
  });
});
