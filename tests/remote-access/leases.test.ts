import { describe, expect, test } from "bun:test";
import remoteAccessSweep from "../../jobs/remote-access-sweep";
import { loadConfig } from "../../modules/platform/config";
import { deviceWebUrl } from "../../modules/remote-access/routes";
import { renewLease } from "../../modules/remote-access/service";
import { verifyCredential } from "../../modules/remote-access/token";
import { approvedDevice, heartbeatUrl, json, register, sampleHeartbeat } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { markSeen } from "../helpers/seen";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions themselves
type Json = any;

const app = await startTestApp({
  BASE_URL: "https://console.example.test",
  BASE_DOMAIN: "devices.example.test",
});
const sql = app.database.sql;
const operator = await app.token("operator");
const viewer = await app.token("viewer");
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** An approved device that heartbeated just now (so it is online). */
async function onlineDevice() {
  const device = await approvedDevice(app);
  const beat = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
  expect(beat.status).toBe(200);
  return device;
}

async function flag(id: string) {
  const [row] = await sql<
    { r: boolean }[]
  >`select remote_access_requested as r from devices where id = ${id}`;
  return row!.r;
}

async function leaseCount(id: string) {
  const [row] = await sql<
    { n: number }[]
  >`select count(*)::int as n from remote_access_leases where device_id = ${id}`;
  return row!.n;
}

const open = (id: string, token: string, body: unknown = {}) =>
  app.fetch(`/api/v1/devices/${id}/remote_access`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": "application/json" },
    body: JSON.stringify(body),
  });

async function heartbeatReply(device: { id: string; token: string }) {
  const response = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
  expect(response.status).toBe(200);
  return ((await response.json()) as Json).data;
}

describe("remote access leases through the API", () => {
  test("an operator opens a lease: 201 with lease_id, expires_at, web_url; the flag is set; the heartbeat carries a signed token and the fast-poll hint", async () => {
    const device = await onlineDevice();
    expect((await heartbeatReply(device)).remote_access_token).toBeUndefined();
    const response = await open(device.id, operator, { ttl_seconds: 300 });
    expect(response.status).toBe(201);
    const data = ((await response.json()) as Json).data;
    expect(data.lease_id).toMatch(/^[0-9a-f-]{36}$/);
    const expires = Date.parse(data.expires_at);
    expect(expires - Date.now()).toBeGreaterThan(290_000);
    expect(expires - Date.now()).toBeLessThan(310_000);
    expect(data.web_url).toBe(`https://dev-${device.id.replace(/-/g, "")}.devices.example.test/`);
    expect(await flag(device.id)).toBe(true);

    const reply = await heartbeatReply(device);
    expect(reply.poll_interval_seconds).toBe(5);
    const claims = verifyCredential(app.config.secretKey, "tunnel", reply.remote_access_token);
    expect(claims?.d).toBe(device.id);
    // Never longer than the hard maximum of the lease (60 minutes by default), never past 65 minutes.
    expect(claims!.exp * 1000 - Date.now()).toBeLessThanOrEqual(60 * 60_000 + 2000);
    expect(
      verifyCredential("another-secret-another-secret-0123456789", "tunnel", reply.remote_access_token),
    ).toBeUndefined();
    expect(verifyCredential(app.config.secretKey, "cookie", reply.remote_access_token)).toBeUndefined();

    const ended = await app.fetch(`/api/v1/devices/${device.id}/remote_access/${data.lease_id}`, {
      method: "DELETE",
      headers: bearer(operator),
    });
    expect(ended.status).toBe(204);
    expect(await flag(device.id)).toBe(false);
    expect((await heartbeatReply(device)).remote_access_token).toBeUndefined();
    const again = await app.fetch(`/api/v1/devices/${device.id}/remote_access/${data.lease_id}`, {
      method: "DELETE",
      headers: bearer(operator),
    });
    expect(again.status).toBe(404);
    expect(((await again.json()) as Json).error.code).toBe("lease_not_found");
  });

  test("the flag stays set while any lease is active: two leases, one ends, the other still holds", async () => {
    const device = await onlineDevice();
    const a = ((await (await open(device.id, operator)).json()) as Json).data;
    const b = ((await (await open(device.id, operator)).json()) as Json).data;
    await app.fetch(`/api/v1/devices/${device.id}/remote_access/${a.lease_id}`, {
      method: "DELETE",
      headers: bearer(operator),
    });
    expect(await flag(device.id)).toBe(true);
    await app.fetch(`/api/v1/devices/${device.id}/remote_access/${b.lease_id}`, {
      method: "DELETE",
      headers: bearer(operator),
    });
    expect(await flag(device.id)).toBe(false);
  });

  test("refusals change nothing: viewer 403, anonymous 401, unknown device 404, offline 409, bad ttl 400", async () => {
    const device = await onlineDevice();
    const cases: [Response, number, string | undefined][] = [
      [await open(device.id, viewer), 403, "forbidden"],
      [
        await app.fetch(`/api/v1/devices/${device.id}/remote_access`, { method: "POST" }),
        401,
        "unauthorized",
      ],
      [await open(crypto.randomUUID(), operator), 404, "device_not_found"],
      [await open("not-a-uuid", operator), 404, "device_not_found"],
      [await open(device.id, operator, { ttl_seconds: 5 }), 400, "invalid_request"],
      [await open(device.id, operator, { ttl_seconds: "60" }), 400, "invalid_request"],
      [await open(device.id, operator, { other: 1 }), 400, "invalid_request"],
    ];
    for (const [response, status, code] of cases) {
      expect(response.status).toBe(status);
      expect(((await response.json()) as Json).error.code).toBe(code);
    }
    expect(await leaseCount(device.id)).toBe(0);
    expect(await flag(device.id)).toBe(false);

    const neverSeen = (await approvedDevice(app)).id;
    const offline = await open(neverSeen, operator);
    expect(offline.status).toBe(409);
    expect(((await offline.json()) as Json).error.code).toBe("device_offline");
    const pending = (await register(app)).body.data.id;
    expect((await open(pending, operator)).status).toBe(404);
    expect(await leaseCount(neverSeen)).toBe(0);
    expect(await flag(neverSeen)).toBe(false);
  });

  test("the sweep job ends expired leases and the leases of devices that went offline, clearing the flag", async () => {
    const expiring = await onlineDevice();
    const goingOffline = await onlineDevice();
    const staying = await onlineDevice();
    const lease = ((await (await open(expiring.id, operator)).json()) as Json).data;
    await open(goingOffline.id, operator);
    await open(staying.id, operator);
    await sql`update remote_access_leases set expires_at = now() - interval '1 second' where id = ${lease.lease_id}`;
    await markSeen(sql, goingOffline.id, 86_400);

    await remoteAccessSweep.run({}, app.services);
    const reasons = await sql<{ device_id: string; end_reason: string | null }[]>`
      select device_id, end_reason from remote_access_leases
      where device_id in (${expiring.id}, ${goingOffline.id}, ${staying.id})`;
    const byDevice = Object.fromEntries(reasons.map((r) => [r.device_id, r.end_reason]));
    expect(byDevice).toEqual({
      [expiring.id]: "expired",
      [goingOffline.id]: "device_offline",
      [staying.id]: null,
    });
    expect([await flag(expiring.id), await flag(goingOffline.id), await flag(staying.id)]).toEqual([
      false,
      false,
      true,
    ]);
    // The cron run scheduled its 30 s follow-up.
    const [followUp] = await sql<{ n: number }[]>`select count(*)::int as n from graphile_worker._private_jobs
      where key = 'remote_access_sweep:half'`;
    expect(followUp!.n).toBe(1);
  });

  test("a lease never outlives REMOTE_ACCESS_MAX_MINUTES, however it is renewed", async () => {
    const device = await onlineDevice();
    const lease = ((await (await open(device.id, operator, { ttl_seconds: 3600 })).json()) as Json).data;
    expect((await renewLease(sql, lease.lease_id, 3600))?.id).toBe(lease.lease_id);
    const [row] = await sql<{ e: string; m: string }[]>`
      select expires_at::text as e, max_expires_at::text as m from remote_access_leases where id = ${lease.lease_id}`;
    expect(Date.parse(row!.e)).toBeLessThanOrEqual(Date.parse(row!.m));
    expect(Date.parse(row!.m) - Date.now()).toBeLessThanOrEqual(60 * 60_000 + 1000);
  });
});

describe("GET /api/v1/check_domain", () => {
  test("table: console host and approved devices allowed (204), everything else 401 or 400", async () => {
    const approved = await approvedDevice(app);
    const pending = (await register(app)).body.data.id;
    const hex = (id: string) => id.replace(/-/g, "");
    const cases: [string | undefined, number][] = [
      ["console.example.test", 204],
      ["CONSOLE.Example.TEST", 204],
      [`dev-${hex(approved.id)}.devices.example.test`, 204],
      [`DEV-${hex(approved.id).toUpperCase()}.DEVICES.example.test`, 204],
      [`dev-${hex(pending)}.devices.example.test`, 401],
      [`dev-${hex(crypto.randomUUID())}.devices.example.test`, 401],
      [`dev-${hex(approved.id)}.other.example.test`, 401],
      [`x.dev-${hex(approved.id)}.devices.example.test`, 401],
      ["devices.example.test", 401],
      ["example.com", 401],
      [undefined, 400],
      ["", 400],
      ["not a host", 400],
      ["host:443", 400],
      ["http://console.example.test", 400],
    ];
    for (const [domain, status] of cases) {
      const query = domain === undefined ? "" : `?domain=${encodeURIComponent(domain)}`;
      const response = await app.fetch(`/api/v1/check_domain${query}`);
      expect({ domain, status: response.status }).toEqual({ domain, status });
      const text = await response.text();
      if (status === 204) expect(text).toBe("");
      if (status === 401) expect(JSON.parse(text)).toEqual({ error: "The host is not permitted" });
      if (status === 400) expect(JSON.parse(text).error.code).toBe("invalid_request");
    }
  });
});

describe("device list filter", () => {
  test("remote_access_requested=true|false filters the API device list", async () => {
    const leased = await onlineDevice();
    const plain = await onlineDevice();
    await open(leased.id, operator);
    const ids = async (value: string) => {
      const response = await app.fetch(`/api/v1/devices?remote_access_requested=${value}&limit=500`, {
        headers: bearer(viewer),
      });
      const body = (await response.json()) as Json;
      expect(body.meta.active_filters.remote_access_requested).toBe(value);
      return body.data.map((d: { id: string }) => d.id) as string[];
    };
    expect(await ids("true")).toContain(leased.id);
    expect(await ids("true")).not.toContain(plain.id);
    expect(await ids("false")).toContain(plain.id);
    expect(await ids("false")).not.toContain(leased.id);
  });
});

describe("console panel", () => {
  const panel = async (id: string, role: "operator" | "viewer") => {
    const session = await app.session(role);
    const response = await app.fetch(`/devices/${id}/remote-access/panel`, {
      method: "POST",
      headers: { cookie: session.cookie, "x-csrf-token": session.csrf },
    });
    expect(response.status).toBe(200);
    return response.text();
  };

  test("an offline device: a clear message and no lease; an online one: the operator's visit opens a console lease", async () => {
    const neverSeen = await approvedDevice(app);
    const offline = await panel(neverSeen.id, "operator");
    expect(offline).toContain("The device is offline");
    expect(offline).not.toContain("Open web UI");
    expect(await leaseCount(neverSeen.id)).toBe(0);

    const device = await onlineDevice();
    const online = await panel(device.id, "operator");
    expect(online).toContain("Open web UI");
    expect(online).toContain("Waiting for the device");
    const [lease] = await sql<{ owner_kind: string; expires_at: string }[]>`
      select owner_kind, expires_at::text from remote_access_leases where device_id = ${device.id}`;
    expect(lease!.owner_kind).toBe("console");
    // Lapses 2 minutes after the last renewal when the page vanishes without a word.
    expect(Date.parse(lease!.expires_at) - Date.now()).toBeLessThanOrEqual(120_000);
    expect(await flag(device.id)).toBe(true);
    const forViewer = await panel(device.id, "viewer");
    expect(forViewer).not.toContain("Open web UI");
    expect(await leaseCount(device.id)).toBe(1);
  });

  test("the panel's POST needs the CSRF token (refused without, no lease)", async () => {
    const device = await onlineDevice();
    const session = await app.session("operator");
    const refused = await app.fetch(`/devices/${device.id}/remote-access/panel`, {
      method: "POST",
      headers: { cookie: session.cookie },
    });
    expect(refused.status).toBe(403);
    expect(await leaseCount(device.id)).toBe(0);
  });
});

describe("Settings", () => {
  test("shows the tunnel host key fingerprint that agents pin (the same one heartbeats announce)", async () => {
    const admin = await app.session("admin");
    const page = await (await app.fetch("/settings", { headers: { cookie: admin.cookie } })).text();
    const fingerprint = app.running.tunnel!.fingerprint;
    expect(fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(page).toContain(fingerprint);
  });
});

describe("the device's web URL", () => {
  test("behind https it is on BASE_URL's port (none for 443); over http, on the tunnel's HTTP front", () => {
    const id = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
    const url = (env: Record<string, string>) =>
      deviceWebUrl(loadConfig({ BASE_DOMAIN: "devices.example.test", TUNNEL_HTTP_PORT: "8080", ...env }), id);
    expect(url({ BASE_URL: "https://console.example.test" })).toBe(
      "https://dev-0190a1b2c3d47e5f8a9b0c1d2e3f4a5b.devices.example.test/",
    );
    expect(url({ BASE_URL: "https://console.example.test:8443" })).toBe(
      "https://dev-0190a1b2c3d47e5f8a9b0c1d2e3f4a5b.devices.example.test:8443/",
    );
    expect(url({ BASE_URL: "http://console.example.test:4000" })).toBe(
      "http://dev-0190a1b2c3d47e5f8a9b0c1d2e3f4a5b.devices.example.test:8080/",
    );
  });
});
