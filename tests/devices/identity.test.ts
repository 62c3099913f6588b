// Device identity: a MAC address is not a secret. A registration of a known MAC gets a token only
// when it proves it is that device (its secret, or for a device from before secrets the token it
// holds); otherwise it changes nothing, is recorded as an identity conflict, and an operator decides.
import { afterAll, describe, expect, test } from "bun:test";
import { ensureBuiltinScripts } from "../../agent/builtin-scripts/index.ts";
import { detectIdentity } from "../../agent/identity.ts";
import { buildRegistrationBody } from "../../agent/register.ts";
import { ScriptStore } from "../../agent/scripts/store.ts";
import { approveDevices } from "../../modules/devices/service";
import { createEnrolmentToken } from "../../modules/enrolment/service";
import { secretFingerprint } from "../../shared/secret-fingerprint.ts";
import { testConfig } from "../agent/helpers";
import { lastEvent } from "../audit/helpers";
import { startTestApp } from "../helpers/app";
import { tempDir } from "../helpers/temp";
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

/** The identity claim the device page shows an operator: its fingerprint and the page's text. */
async function shownClaim(id: string) {
  const operator = await app.session("operator");
  const page = await (await app.fetch(`/devices/${id}`, { headers: { cookie: operator.cookie } })).text();
  const fingerprint = /data-claim-fingerprint>([0-9a-f:]*)</.exec(page)?.[1];
  const accept = /name="fingerprint" value="([0-9a-f:]*)"/.exec(page)?.[1];
  expect(accept).toBe(fingerprint); // the decision form carries the fingerprint shown
  return { fingerprint: fingerprint!, page };
}

/**
 * An operator's answer to the device's identity claim, bound to `fingerprint` (by default the one its
 * page shows now): the form post's status and the flash it leads to.
 */
async function decide(id: string, decision: "accept" | "reject", fingerprint?: string) {
  const operator = await app.session("operator");
  const shown = fingerprint ?? (await shownClaim(id)).fingerprint;
  const response = await app.fetch(`/devices/${id}/identity`, {
    method: "POST",
    headers: { cookie: operator.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: operator.csrf, decision, fingerprint: shown }).toString(),
    redirect: "manual",
  });
  const flash = response.headers.getSetCookie().find((c) => c.startsWith("outpost_flash="))!;
  const value = flash.split(";")[0]!.slice("outpost_flash=".length);
  const text = (JSON.parse(Buffer.from(value, "base64url").toString()) as { text: string }).text;
  return { status: response.status, flash: text };
}

/** What `outpost-agent status` prints for a device secret (the agent's own code). */
const fingerprintOf = (deviceSecret: string) => secretFingerprint(deviceSecret);

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
    for (const [attempt, code] of [
      [{ mac_address: device.mac, product_name: "evil" }, "identity_conflict"],
      [{ mac_address: device.mac, product_name: "evil", device_secret: secret() }, "identity_conflict"],
      // A claim is pending now: later ones are refused and counted.
      [{ mac_address: device.mac.toLowerCase(), api_token: "guessed-token" }, "identity_conflict_pending"],
    ] as const) {
      const stolen = await register(attempt);
      expect(stolen.status).toBe(409);
      expect(stolen.body.error!.code).toBe(code);
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
    // An old agent enrolled at once by an approving enrolment token holds a token and no secret.
    const { token: enrolment } = await createEnrolmentToken(sql, {
      name: "legacy",
      approve: true,
      createdBy: "test",
    });
    const legacy = await register({ mac_address: mac, enrolment_token: enrolment });
    const token = legacy.body.data.api_token!;
    expect(token).toBeString();
    expect((await row(legacy.body.data.id)).secret_hash).toBeNull();
    // Someone without the token cannot bind a secret to it ...
    expect((await register({ mac_address: mac, device_secret: secret() })).status).toBe(409);
    // ... the device with its token can; from then on the secret alone decides.
    const deviceSecret = secret();
    const bound = await register({ mac_address: mac, device_secret: deviceSecret, api_token: token });
    expect(bound.status).toBe(201);
    expect((await row(legacy.body.data.id)).secret_hash).not.toBeNull();
    expect((await register({ mac_address: mac, api_token: bound.body.data.api_token })).status).toBe(409);
    expect((await register({ mac_address: mac, device_secret: deviceSecret })).status).toBe(201);
  });

  test("an approved device with neither secret nor token (registered by an agent from before secrets, approved since): a MAC and a new secret get no token, an operator accepts", async () => {
    const mac = newMac();
    const first = await register({ mac_address: mac }); // an old agent: no secret at all
    await approveDevices(sql, [first.body.data.id]);
    const stranger = secret();
    for (const attempt of [
      { mac_address: mac, device_secret: stranger },
      { mac_address: mac },
      { mac_address: mac, api_token: "guessed" },
    ]) {
      const stolen = await register(attempt);
      expect(stolen.status).toBe(409);
      expect(JSON.stringify(stolen.body)).not.toContain("api_token");
    }
    // The real (upgraded) agent's registration is refused while the stranger's claim is pending; the
    // operator sees the stranger's fingerprint, not the agent's, and rejects it.
    const upgraded = secret();
    expect((await register({ mac_address: mac, device_secret: upgraded })).body.error!.code).toBe(
      "identity_conflict_pending",
    );
    expect((await shownClaim(first.body.data.id)).fingerprint).toBe(fingerprintOf(stranger));
    expect((await decide(first.body.data.id, "reject")).status).toBe(303);
    // Its next registration is the claim shown, and accepted.
    expect((await register({ mac_address: mac, device_secret: upgraded })).body.error!.code).toBe(
      "identity_conflict",
    );
    expect((await shownClaim(first.body.data.id)).fingerprint).toBe(fingerprintOf(upgraded));
    expect((await decide(first.body.data.id, "accept")).status).toBe(303);
    const accepted = await register({ mac_address: mac, device_secret: upgraded });
    expect(accepted.status).toBe(201);
    expect((await beat(first.body.data.id, accepted.body.data.api_token!)).status).toBe(200);
    expect((await register({ mac_address: mac, device_secret: stranger })).status).toBe(409);
  });

  test("a pending device from before secrets: a new secret on its MAC binds nothing (so approving it later hands no stranger a token)", async () => {
    const mac = newMac();
    const first = await register({ mac_address: mac, product_name: "old" }); // an old agent: no secret
    const stranger = secret();
    expect((await register({ mac_address: mac, device_secret: stranger })).status).toBe(409);
    expect((await row(first.body.data.id)).secret_hash).toBeNull();
    // The old agent keeps registering (it proves nothing and gets nothing while pending).
    const again = await register({ mac_address: mac, product_name: "old-2" });
    expect(again.status).toBe(201);
    expect(again.body.data.api_token).toBeUndefined();
    await approveDevices(sql, [first.body.data.id]);
    expect((await register({ mac_address: mac, device_secret: stranger })).status).toBe(409);
  });

  test("a device pre-authorised by an operator is claimed only with its claim token, never by its MAC", async () => {
    for (const approved of [true, false]) {
      const mac = newMac();
      const operator = await app.token("operator");
      const created = await app.fetch("/devices", {
        method: "POST",
        headers: { authorization: `Bearer ${operator}`, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ mac_address: mac, ...(approved ? { approved: "on" } : {}) }).toString(),
        redirect: "manual",
      });
      expect(created.status).toBe(201);
      const claim = /id="claim-token"[^>]*>([\w-]+)</.exec(await created.text())?.[1];
      expect(claim).toStartWith("oen_");
      // Knowing the MAC (with a secret of one's own, or a guessed token) claims nothing.
      for (const attempt of [
        { mac_address: mac, device_secret: secret() },
        { mac_address: mac, device_secret: secret(), enrolment_token: "oen_guessed" },
        { mac_address: mac },
      ]) {
        const stolen = await register(attempt);
        expect({ approved, status: stolen.status }).toEqual({ approved, status: 409 });
        expect(JSON.stringify(stolen.body)).not.toContain("api_token");
      }
      const deviceSecret = secret();
      const first = await register({ mac_address: mac, device_secret: deviceSecret, enrolment_token: claim });
      expect(first.status).toBe(201);
      expect(first.body.data.api_token === undefined).toBe(!approved);
      // Claimed: the token is spent, the secret decides from now on.
      expect(
        (await register({ mac_address: mac, device_secret: secret(), enrolment_token: claim })).status,
      ).toBe(409);
      expect((await register({ mac_address: mac, device_secret: deviceSecret })).status).toBe(201);
    }
  });
});

describe("a claim made by the device itself", () => {
  test("an agent that registered before its claim token was configured: claiming clears its own pending claim", async () => {
    const mac = newMac();
    const operator = await app.token("operator");
    const created = await app.fetch("/devices", {
      method: "POST",
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ mac_address: mac }).toString(),
      redirect: "manual",
    });
    const claim = /id="claim-token"[^>]*>([\w-]+)</.exec(await created.text())![1]!;
    const deviceSecret = secret();
    const early = await register({ mac_address: mac, device_secret: deviceSecret });
    expect(early.body.error!.code).toBe("identity_conflict");
    const claimed = await register({ mac_address: mac, device_secret: deviceSecret, enrolment_token: claim });
    expect(claimed.status).toBe(201);
    // Its own secret decides now: nothing is left for an operator to accept.
    expect((await row(claimed.body.data.id)).identity_conflict_at).toBeNull();
  });
});

describe("a lost claim token", () => {
  /** What the agent itself sends when configured with `enrolmentToken` (its own code, its own MAC). */
  function agentRegistration(enrolmentToken: string) {
    const config = testConfig(tempDir("outpost-claim-agent-"), { enrolment_token: enrolmentToken });
    const store = new ScriptStore(config.scripts_dir);
    ensureBuiltinScripts(store);
    return buildRegistrationBody({ config, store }, null);
  }

  async function reissue(id: string, as: { cookie: string; csrf: string }, csrf = as.csrf) {
    return app.fetch(`/devices/${id}/claim-token`, {
      method: "POST",
      headers: { cookie: as.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrf }).toString(),
      redirect: "manual",
    });
  }

  test("is reissued by an operator: the old one is refused at once, the new one claims the device", async () => {
    const since = new Date();
    const mac = detectIdentity(testConfig(tempDir("outpost-claim-mac-")).interface).mac_address;
    const operator = await app.session("operator");
    const created = await app.fetch("/devices", {
      method: "POST",
      headers: { cookie: operator.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: operator.csrf, mac_address: mac, approved: "on" }).toString(),
      redirect: "manual",
    });
    expect(created.status).toBe(201);
    const html = await created.text();
    const lost = /id="claim-token"[^>]*>([\w-]+)</.exec(html)![1]!;
    const id = /href="\/devices\/([0-9a-f-]{36})"/.exec(html)![1]!;

    // Its page says what it waits for, and how.
    const waiting = await (
      await app.fetch(`/devices/${id}`, { headers: { cookie: operator.cookie } })
    ).text();
    expect(waiting).toContain("Waiting for the device to register with its claim token.");
    expect(waiting).toContain(`${app.config.baseUrl}/install.sh | sh -s -- --token &lt;claim token&gt;`);
    expect(waiting).toContain("enrolment_token: &lt;claim token&gt;");

    // Only an operator, with the form's CSRF token, may reissue; a refusal changes nothing.
    expect((await reissue(id, await app.session("viewer"))).status).toBe(403);
    expect((await reissue(id, operator, "not-the-token")).status).toBe(403);
    const reissued = await reissue(id, operator);
    expect(reissued.status).toBe(200);
    expect(reissued.headers.get("cache-control")).toBe("no-store");
    const token = /id="claim-token"[^>]*>([\w-]+)</.exec(await reissued.text())![1]!;
    expect(token).toStartWith("oen_");
    expect(token).not.toBe(lost);
    const audit = await lastEvent(app, "device.claim_token_reissue", since, 200);
    expect(audit).toMatchObject({ actor: operator.email, target: `device:${id}` });

    // The agent configured with the lost token is refused; with the new one it claims the entry.
    const old = await register(agentRegistration(lost));
    expect(old.status).toBe(409);
    expect(JSON.stringify(old.body)).not.toContain("api_token");
    const claimed = await register(agentRegistration(token));
    expect(claimed.status).toBe(201);
    expect(claimed.body.data.id).toBe(id);
    expect((await beat(id, claimed.body.data.api_token!)).status).toBe(200);

    // Claimed: nothing left to reissue, and the page no longer waits.
    const after = await reissue(id, operator);
    expect(after.status).toBe(303);
    const page = await (await app.fetch(`/devices/${id}`, { headers: { cookie: operator.cookie } })).text();
    expect(page).not.toContain("Waiting for the device to register with its claim token.");
  });
});

describe("an operator decides a conflict", () => {
  test("accept: the new identity registers and gets a token; the old token stops working", async () => {
    const device = await securedDevice();
    const reimaged = secret();
    expect((await register({ mac_address: device.mac, device_secret: reimaged })).status).toBe(409);
    expect((await decide(device.id, "accept")).status).toBe(303);
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
    expect((await decide(device.id, "reject")).status).toBe(303);
    expect((await row(device.id)).identity_conflict_at).toBeNull();
    expect((await beat(device.id, device.token)).status).toBe(200);
  });

  test("two competing claims: the first stays the one shown, the later one is refused and counted, never swapped in", async () => {
    const device = await securedDevice();
    const replacement = secret();
    const intruder = secret();
    const first = await register({ mac_address: device.mac, device_secret: replacement });
    expect(first.body.error!.code).toBe("identity_conflict");
    for (let i = 0; i < 2; i++) {
      const later = await register({ mac_address: device.mac, device_secret: intruder });
      expect(later.status).toBe(409);
      expect(later.body.error!.code).toBe("identity_conflict_pending");
      expect(JSON.stringify(later.body)).not.toContain(fingerprintOf(replacement)); // nothing of the claim leaks
    }
    // The pending claim asking again stays the pending claim.
    expect((await register({ mac_address: device.mac, device_secret: replacement })).body.error!.code).toBe(
      "identity_conflict",
    );
    const { fingerprint, page } = await shownClaim(device.id);
    expect(fingerprint).toBe(fingerprintOf(replacement));
    expect(page).toContain("from 127.0.0.1");
    expect(page).toContain("2 registrations of this MAC with another secret (or none) were refused");
    // The real device keeps working meanwhile.
    expect((await beat(device.id, device.token)).status).toBe(200);

    expect(await decide(device.id, "accept")).toMatchObject({
      status: 303,
      flash: expect.stringMatching(/New identity accepted/),
    });
    expect((await beat(device.id, device.token)).status).toBe(401);
    expect((await register({ mac_address: device.mac, device_secret: intruder })).status).toBe(409);
    const accepted = await register({ mac_address: device.mac, device_secret: replacement });
    expect(accepted.status).toBe(201);
    expect((await beat(device.id, accepted.body.data.api_token!)).status).toBe(200);
  });

  test("a decision binds to the claim shown: a claim that changed in between is refused, nothing changes", async () => {
    const device = await securedDevice();
    const looked = secret();
    expect((await register({ mac_address: device.mac, device_secret: looked })).status).toBe(409);
    const shown = (await shownClaim(device.id)).fingerprint;
    // Meanwhile another operator rejects that claim and another one arrives.
    expect((await decide(device.id, "reject", shown)).status).toBe(303);
    const other = secret();
    expect((await register({ mac_address: device.mac, device_secret: other })).status).toBe(409);

    const stale = await decide(device.id, "accept", shown);
    expect(stale).toMatchObject({
      status: 303,
      flash: expect.stringMatching(/changed since the page was shown/),
    });
    expect((await beat(device.id, device.token)).status).toBe(200); // still the device's identity
    expect((await register({ mac_address: device.mac, device_secret: other })).status).toBe(409);
    expect((await shownClaim(device.id)).fingerprint).toBe(fingerprintOf(other));
    // A form without a fingerprint (or a wrong one) decides nothing either.
    expect((await decide(device.id, "accept", "")).flash).toMatch(/changed since the page was shown/);
    expect((await decide(device.id, "reject", fingerprintOf(looked))).flash).toMatch(/changed/);
    expect((await row(device.id)).identity_conflict_at).not.toBeNull();
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
