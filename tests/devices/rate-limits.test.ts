import { describe, expect, test } from "bun:test";
import { queueCommand } from "../../modules/commands/service";
import { startTestApp } from "../helpers/app";
import { approvedDevice, heartbeatUrl, json, newMac, sampleHeartbeat } from "./helpers";

// Registration is limited per client address (the TCP peer: every request here comes from
// 127.0.0.1), command results and payload fetches per device (one budget for both).
const REGISTER_LIMIT = 6;
const COMMAND_LIMIT = 4;
const app = await startTestApp({
  DEVICE_REGISTER_RATE_LIMIT: String(REGISTER_LIMIT),
  DEVICE_COMMAND_RATE_LIMIT: String(COMMAND_LIMIT),
});
const sql = app.database.sql;

/** Starts a fresh window for `key`, as if the previous one had ended. */
async function endWindow(key: string) {
  await sql`update device_api_rate_limits set window_started_at = now() - interval '61 seconds' where key = ${key}`;
}

async function expectRateLimited(response: Response, limit: number) {
  expect(response.status).toBe(429);
  const retryAfter = Number(response.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  const body = (await response.json()) as { error: { code: string; details: unknown } };
  expect(body.error.code).toBe("rate_limited");
  expect(body.error.details).toEqual({ limit, window_seconds: 60 });
}

async function deviceCount() {
  const [row] = await sql<{ count: number }[]>`select count(*)::int as count from devices`;
  return row!.count;
}

function register(mac = newMac()) {
  return app.fetch("/api/v1/devices/register", json({ mac_address: mac }));
}

describe("registration rate limit (per client address)", () => {
  test("concurrent registrations beyond the limit get exactly the limit through; the rest are 429 and write nothing", async () => {
    await endWindow("register:127.0.0.1");
    const before = await deviceCount();
    const responses = await Promise.all(Array.from({ length: REGISTER_LIMIT + 6 }, () => register()));
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(REGISTER_LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(6);
    await expectRateLimited(responses.find((r) => r.status === 429)!, REGISTER_LIMIT);
    expect(await deviceCount()).toBe(before + REGISTER_LIMIT);
    // Bad bodies are refused as 429 as well while the window is used up (counted before parsing).
    const malformed = await app.fetch("/api/v1/devices/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    expect(malformed.status).toBe(429);
  });

  test("the window's end lets registrations through again; the counter key is the TCP peer, not X-Forwarded-For", async () => {
    await endWindow("register:127.0.0.1");
    for (let i = 0; i < REGISTER_LIMIT; i++) expect((await register()).status).toBe(201);
    const spoofed = await app.fetch("/api/v1/devices/register", {
      ...json({ mac_address: newMac() }),
      headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.9" },
    });
    await expectRateLimited(spoofed, REGISTER_LIMIT);
    const keys = await sql<
      { key: string }[]
    >`select key from device_api_rate_limits where key like 'register:%'`;
    expect(keys.map((k) => k.key)).toEqual(["register:127.0.0.1"]);
    await endWindow("register:127.0.0.1");
    expect((await register()).status).toBe(201);
  });
});

describe("command results and payload fetches (per device)", () => {
  async function deviceWithDeferredPayload() {
    await endWindow("register:127.0.0.1");
    const device = await approvedDevice(app, {}); // two registrations
    const command = await queueCommand(sql, {
      deviceId: device.id,
      type: "install_script",
      payload: {
        name: "big",
        data: `/*---\nname: big\nschema:\n  type: object\n---*/\nfunction main() { return {}; }\n// ${"x".repeat(5000)}`,
      },
      ttlSeconds: 3600,
    });
    const beat = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    const ref = ((await beat.json()) as { data: { commands: { payload_ref: string }[] } }).data.commands[0]!
      .payload_ref;
    return { ...device, commandId: command.id, ref };
  }

  const results = (device: { id: string; token: string }, body: unknown) =>
    app.fetch(`/api/v1/devices/${device.id}/command_results?api_key=${device.token}`, json(body));
  const payload = (device: { id: string; token: string; ref: string }) =>
    app.fetch(`/api/v1/devices/${device.id}/command_payloads/${device.ref}?api_key=${device.token}`);

  test("results and payload fetches share one budget per device; 429 stores nothing; other devices are unaffected", async () => {
    const device = await deviceWithDeferredPayload();
    const other = await deviceWithDeferredPayload();
    // Calls without the device's token are refused before counting: they cannot spend its budget.
    for (let i = 0; i < COMMAND_LIMIT + 2; i++) {
      expect((await results({ id: device.id, token: other.token }, { results: [] })).status).toBe(401);
      expect((await payload({ ...device, token: "wrong" })).status).toBe(401);
    }
    expect((await payload(device)).status).toBe(200);
    expect((await payload(device)).status).toBe(200);
    expect((await results(device, { results: [] })).status).toBe(202);
    expect((await results(device, { results: [] })).status).toBe(202);
    await expectRateLimited(await payload(device), COMMAND_LIMIT);
    const refused = await results(device, { results: [{ command_id: device.commandId, status: "OK" }] });
    await expectRateLimited(refused, COMMAND_LIMIT);
    const [stored] = await sql<
      { status: string }[]
    >`select status from pending_commands where id = ${device.commandId}`;
    expect(stored!.status).toBe("delivered");

    expect((await payload(other)).status).toBe(200);
    const accepted = await results(other, { results: [{ command_id: other.commandId, status: "OK" }] });
    expect(await accepted.json()).toMatchObject({ data: { acknowledged_count: 1 } });

    await endWindow(`commands:${device.id}`);
    const later = await results(device, { results: [{ command_id: device.commandId, status: "OK" }] });
    expect(await later.json()).toMatchObject({ data: { acknowledged_count: 1 } });
  });

  test("concurrent result posts beyond the limit: exactly the limit is accepted", async () => {
    const device = await deviceWithDeferredPayload();
    const responses = await Promise.all(
      Array.from({ length: COMMAND_LIMIT + 5 }, () => results(device, { results: [] })),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(COMMAND_LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
  });
});

describe("counter pruning", () => {
  test("the hourly prune job drops counters whose window ended over an hour ago, and only those", async () => {
    await sql`insert into device_api_rate_limits (key, window_started_at, count) values
      ('prune:old', now() - interval '2 hours', 3), ('prune:fresh', now() - interval '10 minutes', 3)`;
    const { default: pruneJob } = await import("../../jobs/prune-sessions");
    await pruneJob.run({}, app.services);
    const keys = await sql<
      { key: string }[]
    >`select key from device_api_rate_limits where key like 'prune:%'`;
    expect(keys.map((r) => r.key)).toEqual(["prune:fresh"]);
  });
});
