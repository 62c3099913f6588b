import { describe, expect, test } from "bun:test";
import { approveDevices, rejectDevices } from "../../modules/devices/service";
import { startTestApp } from "../helpers/app";
import { approvedDevice, heartbeatUrl, json, register, sampleHeartbeat, schemaOf } from "./helpers";

const RATE_LIMIT = 8;
const app = await startTestApp({ DEVICE_HEARTBEAT_RATE_LIMIT: String(RATE_LIMIT) });
const sql = app.database.sql;

async function telemetryCount(deviceId: string) {
  const [row] = await sql<
    { n: number }[]
  >`select count(*)::int as n from telemetry_events where device_id = ${deviceId}`;
  return row!.n;
}

async function lastSeen(deviceId: string) {
  const [row] = await sql<
    { last_seen_at: string | null }[]
  >`select last_seen_at from devices where id = ${deviceId}`;
  return row?.last_seen_at ?? null;
}

async function errorOf(response: Response) {
  return ((await response.json()) as { error: { code: string; message: string } }).error;
}

describe("heartbeat", () => {
  test("an approved device's heartbeat updates last_seen_at, stores telemetry and answers with no commands", async () => {
    const device = await approvedDevice(app);
    expect(await lastSeen(device.id)).toBeNull();
    const response = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { commands: [] } });
    expect(await lastSeen(device.id)).not.toBeNull();
    const [event] = await sql<{ payload: Record<string, unknown>; part: string }[]>`
      select payload, tableoid::regclass::text as part from telemetry_events where device_id = ${device.id}`;
    expect(event!.payload.scripts).toEqual(sampleHeartbeat().telemetry.scripts);
    expect(event!.payload.connection_status).toEqual({ active: false, connection_string: "", pid: 0 });
    const today = new Date().toISOString().slice(0, 10).replaceAll("-", "");
    expect(event!.part).toBe(`telemetry_events_p${today}`);
    const list = await app.fetch(`/api/v1/devices?search=${device.id}`, {
      headers: { authorization: `Bearer ${await app.token("viewer")}` },
    });
    const listed = (await list.json()) as { data: { online: boolean }[] };
    expect(listed.data[0]!.online).toBe(true);
  });

  test("a schema in telemetry.meta replaces the device's schema and is not stored with the telemetry", async () => {
    const device = await approvedDevice(app, {
      schema_definition: { product: "atom", properties: { a: { type: "number" } } },
    });
    const schema = {
      product: "atom",
      version: "v2",
      type: "object",
      properties: { load: { type: "number" } },
    };
    const body = sampleHeartbeat({
      meta: { timestamp: new Date().toISOString(), schema_definition: schema },
    });
    const response = await app.fetch(heartbeatUrl(device.id, device.token), json(body));
    expect(response.status).toBe(200);
    expect(await schemaOf(app, device.id)).toEqual(schema);
    const [event] = await sql<{ payload: { meta: Record<string, unknown> } }[]>`
      select payload from telemetry_events where device_id = ${device.id}`;
    expect(event!.payload.meta).not.toHaveProperty("schema_definition");
    expect(event!.payload.meta.timestamp).toBeString();
  });

  test("authentication errors come in order: 404, 401 missing, 403 not approved, 401 invalid", async () => {
    const device = await approvedDevice(app);
    const other = await approvedDevice(app);
    const pending = await register(app);
    const rejected = await register(app);
    await rejectDevices(sql, [rejected.body.data.id]);
    const cases: [string, string, number, string][] = [
      ["an unknown device", heartbeatUrl(crypto.randomUUID(), device.token), 404, "device_not_found"],
      ["a non-UUID id", heartbeatUrl("not-a-uuid", device.token), 404, "device_not_found"],
      ["a non-UUID id without key", heartbeatUrl("1234"), 404, "device_not_found"],
      ["no api_key", heartbeatUrl(device.id), 401, "missing_api_key"],
      ["an empty api_key", heartbeatUrl(device.id, ""), 401, "missing_api_key"],
      ["a pending device", heartbeatUrl(pending.body.data.id, "anything"), 403, "device_not_approved"],
      ["a rejected device", heartbeatUrl(rejected.body.data.id, "anything"), 403, "device_not_approved"],
      ["another device's token", heartbeatUrl(device.id, other.token), 401, "invalid_api_key"],
      ["a wrong token", heartbeatUrl(device.id, "x".repeat(43)), 401, "invalid_api_key"],
    ];
    for (const [name, url, status, code] of cases) {
      const response = await app.fetch(url, json(sampleHeartbeat()));
      expect({ name, status: response.status, code: (await errorOf(response)).code }).toEqual({
        name,
        status,
        code,
      });
    }
    expect(await telemetryCount(device.id)).toBe(0);
    expect(await lastSeen(device.id)).toBeNull();
  });

  test("a device rejected after it got its token: its heartbeat is 403 and writes nothing for it", async () => {
    const device = await approvedDevice(app);
    // Approval only goes pending → approved | rejected; a device turned away later (by an admin in
    // the database, or a future transition) still holds a token that was valid.
    await sql`update devices set approval_status = 'rejected' where id = ${device.id}`;
    const response = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    expect(response.status).toBe(403);
    expect((await errorOf(response)).code).toBe("device_not_approved");
    expect(await telemetryCount(device.id)).toBe(0);
    expect(await lastSeen(device.id)).toBeNull();
    const [row] = await sql<{ heartbeat_window_count: number }[]>`
      select heartbeat_window_count from devices where id = ${device.id}`;
    expect(row!.heartbeat_window_count).toBe(0);
    // The spec's order puts approval before the key: a wrong key is still "not approved", not 401.
    const wrongKey = await app.fetch(heartbeatUrl(device.id, "not-its-key"), json(sampleHeartbeat()));
    expect(wrongKey.status).toBe(403);
    expect((await errorOf(wrongKey)).code).toBe("device_not_approved");
  });

  test("an approved device that never fetched its token gets 401 missing_api_key", async () => {
    const pending = await register(app);
    await approveDevices(sql, [pending.body.data.id]);
    const response = await app.fetch(heartbeatUrl(pending.body.data.id, "some-key"), json(sampleHeartbeat()));
    expect(response.status).toBe(401);
    expect((await errorOf(response)).code).toBe("missing_api_key");
  });

  const deep = (levels: number): Record<string, unknown> =>
    levels === 0 ? { v: 1 } : { n: deep(levels - 1) };
  const bad: [string, (token: string) => RequestInit, number, string][] = [
    [
      "malformed JSON",
      () => ({ method: "POST", headers: { "content-type": "application/json" }, body: '{"telemetry":' }),
      400,
      "invalid_json",
    ],
    ["an empty body", () => ({ method: "POST" }), 400, "invalid_request"],
    ["telemetry as a string", () => json({ telemetry: "up" }), 400, "invalid_request"],
    ["scripts as a list", () => json({ telemetry: { scripts: [] } }), 400, "invalid_request"],
    [
      "connection_status as a number",
      () => json({ telemetry: {}, connection_status: 1 }),
      400,
      "invalid_request",
    ],
    [
      "over-deep telemetry",
      () => json({ telemetry: { scripts: deep(12) } }),
      422,
      "telemetry_limits_exceeded",
    ],
    [
      "too many keys in one object",
      () =>
        json({
          telemetry: { scripts: Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`k${i}`, i])) },
        }),
      422,
      "telemetry_limits_exceeded",
    ],
    [
      "an invalid announced schema",
      () => json(sampleHeartbeat({ meta: { schema_definition: { type: "object" } } })),
      422,
      "invalid_schema_definition",
    ],
    [
      "an oversized body",
      () => json({ telemetry: { scripts: { big: "x".repeat(300 * 1024) } } }),
      413,
      "payload_too_large",
    ],
  ];
  for (const [name, init, status, code] of bad) {
    test(`${name} → ${status} ${code}; nothing written`, async () => {
      const device = await approvedDevice(app);
      const response = await app.fetch(heartbeatUrl(device.id, device.token), init(device.token));
      expect(response.status).toBe(status);
      expect((await errorOf(response)).code).toBe(code);
      expect(await telemetryCount(device.id)).toBe(0);
      expect(await lastSeen(device.id)).toBeNull();
    });
  }

  test("a 400 names the part of the body that is wrong and what it must be", async () => {
    const device = await approvedDevice(app);
    const cases: [unknown, string | undefined, string][] = [
      [[], undefined, "The heartbeat body must be a JSON object"],
      [{ telemetry: "up" }, "telemetry", "telemetry must be a JSON object"],
      [{ telemetry: { device: [] } }, "telemetry.device", "telemetry.device must be a JSON object"],
      [{ telemetry: { scripts: 5 } }, "telemetry.scripts", "telemetry.scripts must be a JSON object"],
      [{ telemetry: { meta: "x" } }, "telemetry.meta", "telemetry.meta must be a JSON object"],
      [
        { telemetry: {}, connection_status: 1 },
        "connection_status",
        "connection_status must be a JSON object or null",
      ],
      [
        { telemetry: {}, ssh_host_key: 7 },
        "ssh_host_key",
        "ssh_host_key must be a string of at most 2048 characters",
      ],
    ];
    for (const [body, field, message] of cases) {
      const response = await app.fetch(heartbeatUrl(device.id, device.token), json(body));
      const error = (await response.json()) as {
        error: { code: string; message: string; details?: { field: string } };
      };
      expect({ status: response.status, ...error.error }).toEqual({
        status: 400,
        code: "invalid_request",
        message,
        ...(field ? { details: { field } } : {}),
      });
    }
    expect(await telemetryCount(device.id)).toBe(0);
  });

  test("an invalid announced schema is a 422 naming telemetry.meta.schema_definition", async () => {
    const device = await approvedDevice(app);
    const response = await app.fetch(
      heartbeatUrl(device.id, device.token),
      json(sampleHeartbeat({ meta: { schema_definition: { type: "object" } } })),
    );
    expect(response.status).toBe(422);
    const error = await errorOf(response);
    expect(error.code).toBe("invalid_schema_definition");
    expect((error as { details?: { field?: string } }).details?.field).toBe(
      "telemetry.meta.schema_definition",
    );
  });

  test("connection_status is stored with the telemetry unless the telemetry has its own; null stores none", async () => {
    const device = await approvedDevice(app);
    const stored = async (body: unknown) => {
      expect((await app.fetch(heartbeatUrl(device.id, device.token), json(body))).status).toBe(200);
      const [row] = await sql<{ payload: Record<string, unknown> }[]>`
        select payload from telemetry_events where device_id = ${device.id} order by recorded_at desc, id desc limit 1`;
      return row!.payload;
    };
    expect((await stored({ telemetry: {}, connection_status: { active: true } })).connection_status).toEqual({
      active: true,
    });
    const own = await stored({
      telemetry: { connection_status: { own: 1 } },
      connection_status: { active: true },
    });
    expect(own.connection_status).toEqual({ own: 1 });
    expect("connection_status" in (await stored({ telemetry: {}, connection_status: null }))).toBe(false);
    expect("connection_status" in (await stored({ telemetry: {} }))).toBe(false);
  });

  test("an invalid body from an unknown device is reported as the unknown device", async () => {
    const response = await app.fetch(heartbeatUrl(crypto.randomUUID(), "k"), json({ telemetry: "bad" }));
    expect(response.status).toBe(404);
  });

  test(`the per-device rate limit (${RATE_LIMIT}/min) answers 429 rate_limited with Retry-After`, async () => {
    const device = await approvedDevice(app);
    const other = await approvedDevice(app);
    for (let i = 0; i < RATE_LIMIT; i++) {
      const ok = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
      expect(ok.status).toBe(200);
    }
    const limited = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    expect(limited.status).toBe(429);
    expect(await errorOf(limited)).toMatchObject({
      code: "rate_limited",
      message: "Heartbeat rate limit exceeded",
      details: { limit: RATE_LIMIT, window_seconds: 60 },
    });
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await telemetryCount(device.id)).toBe(RATE_LIMIT);
    // Other devices are not affected, and the window resets after a minute.
    expect((await app.fetch(heartbeatUrl(other.id, other.token), json(sampleHeartbeat()))).status).toBe(200);
    await sql`update devices set heartbeat_window_started_at = now() - interval '61 seconds' where id = ${device.id}`;
    expect((await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()))).status).toBe(
      200,
    );
  });

  test("concurrent heartbeats count against the limit exactly (shared in PostgreSQL)", async () => {
    const device = await approvedDevice(app);
    const responses = await Promise.all(
      Array.from({ length: RATE_LIMIT + 4 }, () =>
        app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat())),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBe(RATE_LIMIT);
    expect(statuses.filter((s) => s === 429).length).toBe(4);
  });
});
