// Sign-in throttling, sessions and API tokens below HTTP, each rule at its edge (limits, windows,
// sliding expiry, the touch intervals), against a real database.
import { describe, expect, test } from "bun:test";
import {
  authenticate,
  createApiToken,
  createOperator,
  createSession,
  deleteSession,
  ensureBootstrapToken,
  LOGIN_LIMITS,
  listApiTokens,
  resolveApiToken,
  resolveSession,
  revokeApiToken,
  unlockSignIn,
} from "../../modules/operators/service";
import { beginSignIn } from "../../modules/operators/sign-in";
import { sha256Hex } from "../../modules/platform/crypto";
import type { AppError } from "../../modules/platform/errors";
import { createTestDatabase } from "../helpers/database";

const { sql, db } = await createTestDatabase();
const PASSWORD = "correct horse battery";
const admin = await createOperator(db, { email: "admin@example.test", password: PASSWORD, role: "admin" });

/** A whole sign-in (the password, then the session: no second factor here), as POST /login does it. */
const signIn = (email: string, password = PASSWORD, address = "10.0.0.1") =>
  authenticate(db, { email, password, address }).then(
    async (operator) => {
      await beginSignIn(db, operator, { ttlHours: 1, address });
      return operator.email;
    },
    (error: AppError) =>
      `${error.status} ${error.code}${error.headers ? ` retry ${error.headers["Retry-After"]}` : ""}`,
  );

async function throttle(key: string, failures: number, minutesAgo = 0) {
  await sql`insert into login_throttle (key, failures, window_started_at)
    values (${key}, ${failures}, now() - make_interval(mins => ${minutesAgo}))
    on conflict (key) do update set failures = excluded.failures, window_started_at = excluded.window_started_at`;
}
const counters = async () =>
  Object.fromEntries(
    (
      await sql<{ key: string; failures: number }[]>`select key, failures from login_throttle order by key`
    ).map((r) => [r.key, r.failures]),
  );

describe("sign-in throttle", () => {
  test("each counter blocks at its limit, not one below it, with Retry-After to the window's end", async () => {
    const cases: [string, number][] = [
      ["email-ip:admin@example.test|10.0.0.1", LOGIN_LIMITS.perEmailAndAddress],
      ["ip:10.0.0.1", LOGIN_LIMITS.perAddress],
      ["email:admin@example.test", LOGIN_LIMITS.perEmail],
    ];
    for (const [key, limit] of cases) {
      await sql`delete from login_throttle`;
      await throttle(key, limit - 1, 10);
      expect(await signIn("admin@example.test")).toBe("admin@example.test");
      await throttle(key, limit, 10);
      const refused = await signIn("admin@example.test");
      const retry = Number(refused.split(" ").pop());
      expect(refused.startsWith("429 rate_limited retry ")).toBe(true);
      // The window started 10 minutes ago: 5 minutes (a few seconds less) are left.
      expect(retry).toBeGreaterThan(280);
      expect(retry).toBeLessThanOrEqual(300);
    }
  });

  test("a full counter whose window has passed blocks nothing, and the next failure starts it again", async () => {
    await sql`delete from login_throttle`;
    await throttle("ip:10.0.0.1", 100, LOGIN_LIMITS.windowMinutes + 1);
    expect(await signIn("admin@example.test", "wrong password")).toBe("401 invalid_credentials");
    expect((await counters())["ip:10.0.0.1"]).toBe(1);
    expect(await signIn("admin@example.test", "wrong password")).toBe("401 invalid_credentials");
    expect((await counters())["ip:10.0.0.1"]).toBe(2);
  });

  test("failures count under all three keys; success clears only this email from this address", async () => {
    await sql`delete from login_throttle`;
    expect(await signIn(" Admin@Example.TEST ", "wrong password")).toBe("401 invalid_credentials");
    expect(await signIn("nobody@example.test", "wrong password")).toBe("401 invalid_credentials");
    expect(await counters()).toEqual({
      "email-ip:admin@example.test|10.0.0.1": 1,
      "email-ip:nobody@example.test|10.0.0.1": 1,
      "email:admin@example.test": 1,
      "email:nobody@example.test": 1,
      "ip:10.0.0.1": 2,
    });
    expect(await signIn(" Admin@Example.TEST ")).toBe("admin@example.test");
    expect(await counters()).toEqual({
      "email-ip:nobody@example.test|10.0.0.1": 1,
      "email:admin@example.test": 1,
      "email:nobody@example.test": 1,
      "ip:10.0.0.1": 2,
    });
    const [row] = await sql<
      { last_login_at: string | null }[]
    >`select last_login_at from operators where id = ${admin.id}`;
    expect(row!.last_login_at).not.toBeNull();
  });

  test("a disabled operator's right password is a failure", async () => {
    await sql`delete from login_throttle`;
    const op = await createOperator(db, { email: "gone@example.test", password: PASSWORD, role: "viewer" });
    await sql`update operators set disabled_at = now() where id = ${op.id}`;
    expect(await signIn("gone@example.test")).toBe("401 invalid_credentials");
    expect((await counters())["email:gone@example.test"]).toBe(1);
  });

  test("unlock clears one email's counters from every address, not a longer email's nor the address's", async () => {
    await sql`delete from login_throttle`;
    for (const key of [
      "email:admin@example.test",
      "email-ip:admin@example.test|10.0.0.1",
      "email-ip:admin@example.test|10.0.0.2",
      "email-ip:admin@example.testing|10.0.0.1",
      "email:admin@example.testing",
      "ip:10.0.0.1",
    ])
      await throttle(key, 5);
    expect(await unlockSignIn(db, " ADMIN@example.test ")).toBe(3);
    expect(Object.keys(await counters())).toEqual([
      "email-ip:admin@example.testing|10.0.0.1",
      "email:admin@example.testing",
      "ip:10.0.0.1",
    ]);
  });
});

describe("sessions", () => {
  const ttlHours = 12;
  const hoursLeft = async (token: string) => {
    const [row] = await sql<{ h: number }[]>`
      select extract(epoch from expires_at - now()) / 3600 as h from operator_sessions where id_hash = ${sha256Hex(token)}`;
    return row ? Number(row.h) : undefined;
  };

  test("only the hash is stored; the session lasts ttlHours; a long user agent is cut", async () => {
    const token = await createSession(db, { operatorId: admin.id, ttlHours, userAgent: "u".repeat(400) });
    const [row] = await sql<{ id_hash: string; user_agent: string }[]>`
      select id_hash, user_agent from operator_sessions where id_hash = ${sha256Hex(token)}`;
    expect(row!.user_agent).toBe("u".repeat(300));
    expect(await hoursLeft(token)).toBeGreaterThan(11.9);
    expect(await hoursLeft(token)).toBeLessThanOrEqual(12);
    expect(await resolveSession(db, token, ttlHours)).toEqual({
      idHash: sha256Hex(token),
      operator: { id: admin.id, email: admin.email, role: "admin" },
    });
  });

  test("activity slides the expiry at most every five minutes", async () => {
    const token = await createSession(db, { operatorId: admin.id, ttlHours: 1 });
    await resolveSession(db, token, ttlHours);
    expect(await hoursLeft(token)).toBeLessThan(1.01); // seen just now: not touched
    await sql`update operator_sessions set last_seen_at = now() - interval '4 minutes' where id_hash = ${sha256Hex(token)}`;
    await resolveSession(db, token, ttlHours);
    expect(await hoursLeft(token)).toBeLessThan(1.01);
    await sql`update operator_sessions set last_seen_at = now() - interval '6 minutes' where id_hash = ${sha256Hex(token)}`;
    await resolveSession(db, token, ttlHours);
    expect(await hoursLeft(token)).toBeGreaterThan(11.9);
    const [row] = await sql<{ ago: number }[]>`
      select extract(epoch from now() - last_seen_at) as ago from operator_sessions where id_hash = ${sha256Hex(token)}`;
    expect(Number(row!.ago)).toBeLessThan(60);
  });

  test("expired, deleted, unknown sessions and those of disabled operators resolve to nothing", async () => {
    const expired = await createSession(db, { operatorId: admin.id, ttlHours });
    await sql`update operator_sessions set expires_at = now() - interval '1 second' where id_hash = ${sha256Hex(expired)}`;
    expect(await resolveSession(db, expired, ttlHours)).toBeUndefined();
    const deleted = await createSession(db, { operatorId: admin.id, ttlHours });
    await deleteSession(db, sha256Hex(deleted));
    expect(await resolveSession(db, deleted, ttlHours)).toBeUndefined();
    expect(await resolveSession(db, "unknown", ttlHours)).toBeUndefined();
    const op = await createOperator(db, { email: "off@example.test", password: PASSWORD, role: "viewer" });
    const session = await createSession(db, { operatorId: op.id, ttlHours });
    expect(await resolveSession(db, session, ttlHours)).toBeDefined();
    await sql`update operators set disabled_at = now() where id = ${op.id}`;
    expect(await resolveSession(db, session, ttlHours)).toBeUndefined();
  });
});

describe("API tokens", () => {
  const refusal = (input: { name: string; role: string }) =>
    createApiToken(db, input as never).then(
      () => "created",
      (error: AppError) => `${error.status} ${error.code}`,
    );

  test("a name of 1 to 100 characters (trimmed) and a known role", async () => {
    expect(await refusal({ name: "   ", role: "viewer" })).toBe("400 invalid_request");
    expect(await refusal({ name: "x".repeat(101), role: "viewer" })).toBe("400 invalid_request");
    expect(await refusal({ name: "x".repeat(100), role: "viewer" })).toBe("created");
    expect(await refusal({ name: "ci", role: "root" })).toBe("400 invalid_request");
    const { token, record } = await createApiToken(db, { name: "  ci  ", role: "operator" });
    expect(token).toMatch(/^opt_[\w-]{40,}$/);
    expect(record).toMatchObject({
      name: "ci",
      role: "operator",
      prefix: token.slice(0, 10),
      revokedAt: null,
    });
    expect((await listApiTokens(db)).map((t) => t.id)).toContain(record.id);
    const [row] = await sql<
      { token_hash: string }[]
    >`select token_hash from api_tokens where id = ${record.id}`;
    expect(row!.token_hash).toBe(sha256Hex(token));
  });

  test("resolving marks it used at most once a minute; a revoked token resolves to nothing", async () => {
    const { token, record } = await createApiToken(db, { name: "ci", role: "viewer" });
    const lastUsed = async () =>
      (
        await sql<
          { t: string | null }[]
        >`select last_used_at::text as t from api_tokens where id = ${record.id}`
      )[0]!.t;
    expect(await lastUsed()).toBeNull();
    expect(await resolveApiToken(db, token)).toEqual({ id: record.id, name: "ci", role: "viewer" });
    const first = await lastUsed();
    expect(first).not.toBeNull();
    await sql`update api_tokens set last_used_at = now() - interval '50 seconds' where id = ${record.id}`;
    const recent = await lastUsed();
    await resolveApiToken(db, token);
    expect(await lastUsed()).toBe(recent);
    await sql`update api_tokens set last_used_at = now() - interval '70 seconds' where id = ${record.id}`;
    const old = await lastUsed();
    await resolveApiToken(db, token);
    expect(await lastUsed()).not.toBe(old);
    expect(await resolveApiToken(db, `${token}x`)).toBeUndefined();
    expect(await revokeApiToken(db, record.id)).toBe(true);
    expect(await revokeApiToken(db, record.id)).toBe(false);
    expect(await resolveApiToken(db, token)).toBeUndefined();
  });

  test("the bootstrap token is an admin token, made once, and brought back when revoked", async () => {
    const secret = "b".repeat(40);
    await ensureBootstrapToken(db, secret);
    await ensureBootstrapToken(db, secret);
    const rows = await sql<
      { id: string; prefix: string }[]
    >`select id, prefix from api_tokens where name = 'bootstrap'`;
    expect(rows.length).toBe(1);
    expect(rows[0]!.prefix).toBe("bbbbbb");
    await revokeApiToken(db, rows[0]!.id);
    await ensureBootstrapToken(db, secret);
    expect(await resolveApiToken(db, secret)).toEqual({ id: rows[0]!.id, name: "bootstrap", role: "admin" });
  });
});
