import { describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { apiTokens, operatorSessions, operators } from "../../modules/operators/schema";
import { createOperator, LOGIN_LIMITS, revokeApiToken } from "../../modules/operators/service";
import { csrfTokenFor, SESSION_COOKIE } from "../../modules/platform/access";
import { sha256Hex } from "../../modules/platform/crypto";
import { form, startTestApp } from "../helpers/app";

const app = await startTestApp();
const db = app.database.db;

/** GETs the login page and returns the anonymous CSRF cookie and token a browser would hold. */
async function loginForm() {
  const response = await app.fetch("/login");
  const cookie = response.headers.get("set-cookie")!.split(";")[0]!;
  const token = (await response.text()).match(/name="_csrf" value="([^"]+)"/)![1]!;
  return { cookie, token };
}

async function login(email: string, password: string, address = "127.0.0.1") {
  const { cookie, token } = await loginForm();
  const init = form({ email, password, _csrf: token, next: "/jobs" });
  return app.fetch("/login", {
    ...init,
    headers: { ...(init.headers as Record<string, string>), cookie, "x-forwarded-for": address },
  });
}

describe("sign-in", () => {
  test("right password: session cookie HttpOnly+SameSite=Lax, redirect to next", async () => {
    await createOperator(db, { email: "ok@example.test", password: "right password 1", role: "viewer" });
    const response = await login("OK@example.test", "right password 1");
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/jobs");
    const cookie = response.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`))!;
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).not.toContain("Secure"); // BASE_URL is http here
    const page = await app.fetch("/jobs", { headers: { cookie: cookie.split(";")[0]! } });
    expect(page.status).toBe(200);
  });

  test("wrong password: 401, no session; repeated failures: 429 with Retry-After", async () => {
    await createOperator(db, { email: "victim@example.test", password: "right password 2", role: "admin" });
    const sessionsBefore = await db.$count(operatorSessions);
    for (let attempt = 1; attempt <= LOGIN_LIMITS.perEmail; attempt++) {
      const response = await login("victim@example.test", `wrong ${attempt}`);
      expect(response.status).toBe(401);
      expect(await response.text()).toContain("Wrong email or password");
    }
    const limited = await login("victim@example.test", "right password 2");
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await db.$count(operatorSessions)).toBe(sessionsBefore);
  });

  test("a login form posted without its CSRF token is refused and signs nobody in", async () => {
    await createOperator(db, { email: "csrf@example.test", password: "right password 3", role: "admin" });
    const before = await db.$count(operatorSessions);
    const response = await app.fetch(
      "/login",
      form({ email: "csrf@example.test", password: "right password 3" }),
    );
    expect(response.status).toBe(403);
    expect(await db.$count(operatorSessions)).toBe(before);
  });
});

describe("sessions and CSRF", () => {
  test("a state-changing POST without the CSRF token is refused and changes nothing", async () => {
    const admin = await app.session("admin");
    const before = await db.$count(apiTokens);
    const refused = await app.fetch("/settings/tokens", {
      ...form({ name: "sneaky", role: "admin" }),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: admin.cookie },
    });
    expect(refused.status).toBe(403);
    expect(await db.$count(apiTokens)).toBe(before);

    const wrong = await app.fetch("/settings/tokens", {
      ...form({
        name: "sneaky",
        role: "admin",
        _csrf: csrfTokenFor(app.config.secretKey, "another-session"),
      }),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: admin.cookie },
    });
    expect(wrong.status).toBe(403);
    expect(await db.$count(apiTokens)).toBe(before);

    const accepted = await app.fetch("/settings/tokens", {
      ...form({ name: "legit", role: "viewer", _csrf: admin.csrf }),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: admin.cookie },
    });
    expect(accepted.status).toBe(201);
    const html = await accepted.text();
    const secret = html.match(/id="new-token">(opt_[\w-]+)</)![1]!;
    const [stored] = await db.select().from(apiTokens).where(eq(apiTokens.name, "legit"));
    expect(stored!.tokenHash).toBe(sha256Hex(secret));
    expect(JSON.stringify(stored)).not.toContain(secret);
  });

  test("an expired session is refused: pages redirect to sign-in, the API answers 401", async () => {
    const viewer = await app.session("viewer");
    await db.update(operatorSessions).set({ expiresAt: sql`now() - interval '1 minute'` });
    const page = await app.fetch("/jobs", { headers: { cookie: viewer.cookie } });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/login?next=%2Fjobs");
    const api = await app.fetch("/api/v1/jobs", { headers: { cookie: viewer.cookie } });
    expect(api.status).toBe(401);
    expect((await api.json()).error.code).toBe("unauthorized");
  });

  test("a disabled operator's session stops working", async () => {
    const viewer = await app.session("viewer");
    expect((await app.fetch("/jobs", { headers: { cookie: viewer.cookie } })).status).toBe(200);
    await db.update(operators).set({ disabledAt: new Date() }).where(eq(operators.id, viewer.operatorId));
    expect((await app.fetch("/jobs", { headers: { cookie: viewer.cookie } })).status).toBe(303);
  });

  test("logout deletes the session server-side", async () => {
    const viewer = await app.session("viewer");
    const response = await app.fetch("/logout", {
      ...form({ _csrf: viewer.csrf }),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: viewer.cookie },
    });
    expect(response.status).toBe(303);
    expect(response.headers.getSetCookie().join()).toContain(`${SESSION_COOKIE}=;`);
    expect((await app.fetch("/jobs", { headers: { cookie: viewer.cookie } })).status).toBe(303);
  });
});

describe("API tokens", () => {
  test("a viewer token reads but cannot write; a revoked token is refused", async () => {
    const viewer = await app.token("viewer");
    const read = await app.fetch("/api/v1/jobs", { headers: { authorization: `Bearer ${viewer}` } });
    expect(read.status).toBe(200);
    const write = await app.fetch("/api/v1/jobs/prune_sessions/run", {
      method: "POST",
      headers: { authorization: `Bearer ${viewer}` },
    });
    expect(write.status).toBe(403);
    expect((await write.json()).error.code).toBe("forbidden");
    const [queued] = await app.database
      .sql`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'prune_sessions'`;
    expect(queued!.n).toBe(0);

    const admin = await app.token("admin");
    const [row] = await db
      .select()
      .from(apiTokens)
      .where(eq(apiTokens.tokenHash, sha256Hex(admin)));
    await revokeApiToken(db, row!.id);
    const revoked = await app.fetch("/api/v1/jobs/prune_sessions/run", {
      method: "POST",
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(revoked.status).toBe(401);
  });

  test("an unknown bearer token is 401", async () => {
    const response = await app.fetch("/api/v1/jobs", { headers: { authorization: "Bearer opt_nope" } });
    expect(response.status).toBe(401);
  });
});

describe("first-run setup", () => {
  test("/setup is closed once an operator exists", async () => {
    const response = await app.fetch("/setup");
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/login");
  });
});

describe("bootstrap from the environment", () => {
  test("OUTPOST_BOOTSTRAP_ADMIN_* creates the admin once; no setup code is issued", async () => {
    const booted = await startTestApp({
      OUTPOST_BOOTSTRAP_ADMIN_EMAIL: "Boot@Example.test",
      OUTPOST_BOOTSTRAP_ADMIN_PASSWORD: "bootstrap password",
      OUTPOST_BOOTSTRAP_API_TOKEN: "bootstrap-token-0123456789-0123456789",
    });
    expect(booted.running.setupCode).toBeUndefined();
    const [admin] = await booted.database.db
      .select()
      .from(operators)
      .where(eq(operators.email, "boot@example.test"));
    expect(admin!.role).toBe("admin");
    expect(await Bun.password.verify("bootstrap password", admin!.passwordHash)).toBe(true);
    const api = await booted.fetch("/api/v1/jobs/prune_sessions/run", {
      method: "POST",
      headers: { authorization: "Bearer bootstrap-token-0123456789-0123456789" },
    });
    expect(api.status).toBe(202);
  });
});
