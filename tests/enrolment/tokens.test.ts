// Enrolment tokens end to end over HTTP: an admin creates one in Settings (shown once, with the install
// line), devices registering with it follow its policy, and every kind of bad token is refused with its
// code while nothing changes.
import { describe, expect, test } from "bun:test";
import { createEnrolmentToken } from "../../modules/enrolment/service";
import { newMac } from "../devices/helpers";
import { startTestApp } from "../helpers/app";

const app = await startTestApp({ BASE_URL: "https://outpost.example.test" });
const sql = app.database.sql;

async function register(body: Record<string, unknown>) {
  const response = await app.fetch("/api/v1/devices/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ mac_address: newMac(), ...body }),
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      data?: Record<string, unknown>;
      error?: { code: string; details?: unknown };
    },
  };
}

const deviceCount = async () => Number((await sql`select count(*)::int as n from devices`)[0]!.n);
const uses = async (id: string) =>
  Number((await sql`select uses from enrolment_tokens where id = ${id}::uuid`)[0]!.uses);
const token = (input: Partial<Parameters<typeof createEnrolmentToken>[1]> = {}) =>
  createEnrolmentToken(sql, {
    name: `t-${crypto.randomUUID().slice(0, 6)}`,
    approve: true,
    createdBy: "test",
    ...input,
  });

describe("enrolment tokens", () => {
  test("an admin creates one in Settings: shown once with its install line; the list shows its prefix only", async () => {
    const admin = await app.session("admin");
    const response = await app.fetch("/settings/enrolment-tokens", {
      method: "POST",
      headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        _csrf: admin.csrf,
        name: "Line 2",
        max_uses: "5",
        expires_in_days: "30",
        approve: "true",
      }),
    });
    expect(response.status).toBe(201);
    const html = await response.text();
    const secret = /id="new-enrolment-token"[^>]*>([^<]+)</.exec(html)![1]!;
    expect(secret).toMatch(/^oen_[A-Za-z0-9_-]{32}$/);
    expect(html).toContain(`curl -fsSL https://outpost.example.test/install.sh | sh -s -- --token ${secret}`);
    const [row] =
      await sql`select token_hash, prefix, approve, max_uses from enrolment_tokens where name = 'Line 2'`;
    expect(row!.token_hash).not.toContain(secret);
    expect(row).toMatchObject({ approve: true, max_uses: 5, prefix: secret.slice(0, 10) });
    const again = await (await app.fetch("/settings", { headers: { cookie: admin.cookie } })).text();
    expect(again).not.toContain(secret);
    expect(again).toContain(`${secret.slice(0, 10)}…`);
  });

  test("bad form input: the field's message, nothing stored", async () => {
    const admin = await app.session("admin");
    const before = (await sql`select count(*)::int as n from enrolment_tokens`)[0]!.n;
    for (const [field, value] of [
      ["max_uses", "0"],
      ["expires_in_days", "99999"],
      ["name", " "],
    ] as const) {
      const response = await app.fetch("/settings/enrolment-tokens", {
        method: "POST",
        headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ _csrf: admin.csrf, name: "Bad", [field]: value }),
      });
      expect({ field, status: response.status }).toEqual({ field, status: 400 });
    }
    expect((await sql`select count(*)::int as n from enrolment_tokens`)[0]!.n).toBe(before);
  });

  test("policy: approve at once gives the device its token; pending leaves it pending", async () => {
    const approving = await token({ approve: true });
    const approved = await register({ enrolment_token: approving.token, device_secret: "s".repeat(40) });
    expect(approved.status).toBe(201);
    expect(approved.body.data).toMatchObject({ approval_status: "approved" });
    expect(typeof approved.body.data!.api_token).toBe("string");
    const waiting = await token({ approve: false });
    const pending = await register({ enrolment_token: waiting.token });
    expect(pending.status).toBe(201);
    expect(pending.body.data).toMatchObject({ approval_status: "pending" });
    expect(pending.body.data!.api_token).toBeUndefined();
    expect(await uses(approving.record.id)).toBe(1);
  });

  test("a known device registering again with the token uses it no more", async () => {
    const { token: secret, record } = await token({ approve: true, maxUses: 1 });
    const mac = newMac();
    const body = { mac_address: mac, enrolment_token: secret, device_secret: "k".repeat(40) };
    expect((await register(body)).status).toBe(201);
    expect((await register(body)).status).toBe(201);
    expect(await uses(record.id)).toBe(1);
  });

  test("max uses holds under concurrent registrations", async () => {
    const { token: secret, record } = await token({ approve: true, maxUses: 3 });
    const results = await Promise.all(Array.from({ length: 8 }, () => register({ enrolment_token: secret })));
    expect(results.filter((r) => r.status === 201).length).toBe(3);
    expect(results.filter((r) => r.status === 403).map((r) => r.body.error!.code)).toEqual(
      Array(5).fill("enrolment_token_used_up"),
    );
    expect(await uses(record.id)).toBe(3);
  });

  test("refused: unknown, revoked, expired, wrong product; nothing registered", async () => {
    const before = await deviceCount();
    expect((await register({ enrolment_token: "oen_nope" })).body.error!.code).toBe(
      "enrolment_token_invalid",
    );
    expect((await register({ enrolment_token: "oen_nope" })).status).toBe(401);
    const revoked = await token();
    const admin = await app.session("admin");
    const revoke = await app.fetch(`/settings/enrolment-tokens/${revoked.record.id}/revoke`, {
      method: "POST",
      headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: admin.csrf }),
    });
    expect(revoke.status).toBe(303);
    expect((await register({ enrolment_token: revoked.token })).body.error!.code).toBe(
      "enrolment_token_invalid",
    );
    const expired = await token({ expiresInDays: 1 });
    await sql`update enrolment_tokens set expires_at = now() - interval '1 second' where id = ${expired.record.id}::uuid`;
    const late = await register({ enrolment_token: expired.token });
    expect([late.status, late.body.error!.code]).toEqual([403, "enrolment_token_expired"]);
    const scoped = await token({ productName: "gateway-v2" });
    const wrong = await register({ enrolment_token: scoped.token, product_name: "sensor" });
    expect([wrong.status, wrong.body.error!.code]).toEqual([403, "enrolment_token_wrong_product"]);
    expect(await deviceCount()).toBe(before);
    const right = await register({ enrolment_token: scoped.token, product_name: "gateway-v2" });
    expect(right.status).toBe(201);
    expect((await register({ enrolment_token: 42 })).status).toBe(400);
  });
});
