// Device identity: a MAC address is not a secret. A registration of a known MAC gets a token only
// when it proves it is that device (its secret, or for a device from before secrets the token it
// holds); otherwise it changes nothing, is recorded as an identity conflict, and an operator decides.
import { afterAll, describe, expect, test } from "bun:test";
import { approveDevices } from "../../modules/devices/service";
import { startTestApp } from "../helpers/app";
import { heartbeatUrl, json, newMac, sampleHeartbeat } from "./helpers";

const app = await startTestApp();
afterAll(() => app.stop());
const sql = app.database.sql;

type Reply = { data: { id: string; api_token?: string; approval_status: string }; error?: { code: string } };
async function register(body: Record<string, unknown>) {
  const response = await app.fetch("/api/v1/devices/register", json(body));
  return { status: response.status, body: (await response.json()) as Reply };
}
const secret = () => crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
const beat = (id: string, token: string) => app.fetch(heartbeatUrl(id, token), json(sampleHeartbeat()));

/** A device registered with `deviceSecret`, approved, holding its token. */
async function securedDevice(deviceSecret = secret()) {
  const mac = newMac();
  const first = await register({ mac_address: mac, product_name: "gate", device_secret: deviceSecret });
  expect(first.status).toBe(201);
  await approveDevices(sql, [first.body.data.id]);
  const again = await register({ mac_address: mac, device_secret: deviceSecret });
  expect(again.body.data.api_token).toBeString();
  return { id: first.body.data.id, mac, secret: deviceSecret, token: again.body.data.api_token! };
}

async function row(id: string) {
  const [device] = await sql<
    {
      secret_hash: string | null;
      identity_conflict_at: Date | null;
      conflict_address: string | null;
      product_name: string;
    }[]
  >`select secret_hash, identity_conflict_at, conflict_address, product_name from devices where id = ${id}::uuid`;
  return device!;
}

describe("registration of a known MAC address", () => {
  test("a stranger who knows only the MAC gets no token; the device keeps working", async () => {
    const device = await securedDevice();
    for (const attempt of [
      { mac_address: device.mac, product_name: "evil" },
      { mac_address: device.mac, product_name: "evil", device_secret: secret() },
      { mac_address: device.mac.toLowerCase(), api_token: "guessed-token" },
    ]) {
      const stolen = await register(attempt);
      expect(stolen.status).toBe(409);
      expect(stolen.body.error!.code).toBe("identity_conflict");
      expect(JSON.stringify(stolen.body)).not.toContain("api_token");
    }
    expect((await beat(device.id, device.token)).status).toBe(200);
    const stored = await row(device.id);
    expect(stored.product_name).toBe("gate"); // nothing of the stranger's was stored
    expect(stored.identity_conflict_at).not.toBeNull();
    expect(stored.conflict_address).toBe("127.0.0.1");
  });

  test("the device itself, with its secret, registers again and gets a fresh token", async () => {
    const device = await securedDevice();
    const again = await register({ mac_address: device.mac, device_secret: device.secret });
    expect(again.status).toBe(201);
    expect(again.body.data.api_token).toBeString();
    expect(again.body.data.api_token).not.toBe(device.token);
    expect((await beat(device.id, again.body.data.api_token!)).status).toBe(200);
  });

  test("a device from before secrets binds its secret by proving the token it holds", async () => {
    const mac = newMac();
    const first = await register({ mac_address: mac });
    await approveDevices(sql, [first.body.data.id]);
    const legacy = await register({ mac_address: mac }); // as an old agent did: no secret at all
    const token = legacy.body.data.api_token!;
    expect(token).toBeString();
    expect((await row(first.body.data.id)).secret_hash).toBeNull();
    // Someone without the token cannot bind a secret to it ...
    expect((await register({ mac_address: mac, device_secret: secret() })).status).toBe(409);
    // ... the device with its token can; from then on the secret alone decides.
    const deviceSecret = secret();
    const bound = await register({ mac_address: mac, device_secret: deviceSecret, api_token: token });
    expect(bound.status).toBe(201);
    expect((await row(first.body.data.id)).secret_hash).not.toBeNull();
    expect((await register({ mac_address: mac, api_token: bound.body.data.api_token })).status).toBe(409);
    expect((await register({ mac_address: mac, device_secret: deviceSecret })).status).toBe(201);
  });

  test("a device pre-authorised by an operator is bound by the first agent that registers it", async () => {
    const mac = newMac();
    const token = await app.token("operator");
    const created = await app.fetch("/devices", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ mac_address: mac, approved: "on" }).toString(),
      redirect: "manual",
    });
    expect(created.status).toBe(303);
    const deviceSecret = secret();
    const first = await register({ mac_address: mac, device_secret: deviceSecret });
    expect(first.status).toBe(201);
    expect(first.body.data.api_token).toBeString();
    expect((await register({ mac_address: mac, device_secret: secret() })).status).toBe(409);
  });
});

describe("an operator decides a conflict", () => {
  test("accept: the new identity registers and gets a token; the old token stops working", async () => {
    const device = await securedDevice();
    const reimaged = secret();
    expect((await register({ mac_address: device.mac, device_secret: reimaged })).status).toBe(409);
    const admin = await app.session("operator");
    const decided = await app.fetch(`/devices/${device.id}/identity`, {
      method: "POST",
      headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: admin.csrf, decision: "accept" }).toString(),
      redirect: "manual",
    });
    expect(decided.status).toBe(303);
    expect((await beat(device.id, device.token)).status).toBe(401);
    const fresh = await register({ mac_address: device.mac, device_secret: reimaged });
    expect(fresh.status).toBe(201);
    expect((await beat(device.id, fresh.body.data.api_token!)).status).toBe(200);
    expect((await row(device.id)).identity_conflict_at).toBeNull();
    expect((await register({ mac_address: device.mac, device_secret: device.secret })).status).toBe(409);
  });

  test("reject: the conflict is forgotten, the device keeps its identity and token", async () => {
    const device = await securedDevice();
    expect((await register({ mac_address: device.mac, device_secret: secret() })).status).toBe(409);
    const operator = await app.session("operator");
    const decided = await app.fetch(`/devices/${device.id}/identity`, {
      method: "POST",
      headers: { cookie: operator.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: operator.csrf, decision: "reject" }).toString(),
      redirect: "manual",
    });
    expect(decided.status).toBe(303);
    expect((await row(device.id)).identity_conflict_at).toBeNull();
    expect((await beat(device.id, device.token)).status).toBe(200);
  });
});

describe("revoking an approved device", () => {
  test("from /api/json: rejected, token cleared, open remote access ended", async () => {
    const device = await securedDevice();
    const operator = await app.token("operator");
    expect((await beat(device.id, device.token)).status).toBe(200); // online: remote access can open
    const opened = await app.fetch(`/api/v1/devices/${device.id}/remote_access`, {
      method: "POST",
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(opened.status).toBe(201);
    const revoked = await app.fetch(`/api/json/devices/${device.id}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/vnd.api+json" },
      body: JSON.stringify({
        data: { type: "device", id: device.id, attributes: { approval_status: "rejected" } },
      }),
    });
    expect(revoked.status).toBe(200);
    expect((await beat(device.id, device.token)).status).toBe(403);
    const [state] = await sql<
      { api_token_hash: string | null; remote_access_requested: boolean; open: number }[]
    >`
      select api_token_hash, remote_access_requested,
        (select count(*)::int from remote_access_leases where device_id = d.id and ended_at is null) as open
      from devices d where id = ${device.id}::uuid`;
    expect(state).toEqual({ api_token_hash: null, remote_access_requested: false, open: 0 });
    const [ended] = await sql<{ end_reason: string }[]>`
      select end_reason from remote_access_leases where device_id = ${device.id}::uuid`;
    expect(ended!.end_reason).toBe("revoked");
    // A rejected device cannot come back by registering (with its secret it is accepted, without a token).
    const back = await register({ mac_address: device.mac, device_secret: device.secret });
    expect(back.body.data.approval_status).toBe("rejected");
    expect(back.body.data.api_token).toBeUndefined();
  });
});
