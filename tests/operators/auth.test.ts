import { describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import {
  apiTokens,
  loginThrottle,
  operatorSessions,
  operators,
  setupCodes,
} from "../../modules/operators/schema";
import {
  authenticate,
  createOperator,
  issueSetupCode,
  LOGIN_LIMITS,
  revokeApiToken,
} from "../../modules/operators/service";
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

/** Signs in from this process: the client address the server counts is the TCP peer, 127.0.0.1. */
async function login(email: string, password: string, extraHeaders: Record<string, string> = {}) {
  const { cookie, token } = await loginForm();
  const init = form({ email, password, _csrf: token, next: "/jobs" });
  return app.fetch("/login", {
    ...init,
    headers: { ...(init.headers as Record<string, string>), cookie, ...extraHeaders },
  });
}

/** Forgets the failed sign-ins counted so far (per email and per address), as a window's end does. */
async function resetLoginThrottle() {
  await db.delete(loginThrottle);
}

async function queuedJobs(task: string): Promise<number> {
  const [row] = await app.database
    .sql`select count(*)::int as n from graphile_worker.jobs where task_identifier = ${task}`;
  return row!.n;
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
    for (let attempt = 1; attempt <= LOGIN_LIMITS.perEmailAndAddress; attempt++) {
      const response = await login("victim@example.test", `wrong ${attempt}`);
      expect(response.status).toBe(401);
      expect(await response.text()).toContain("Wrong email or password");
    }
    const limited = await login("victim@example.test", "right password 2");
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await db.$count(operatorSessions)).toBe(sessionsBefore);
  });

  test("a stranger's failures elsewhere do not lock the operator out of their own address; unlock clears them", async () => {
    await resetLoginThrottle();
    await createOperator(db, { email: "pair@example.test", password: "right password 9", role: "viewer" });
    const attempt = (address: string, password: string) =>
      authenticate(db, { email: "pair@example.test", password, address }).then(
        () => "ok",
        (error: { status: number }) => error.status,
      );
    for (let i = 0; i < LOGIN_LIMITS.perEmailAndAddress; i++)
      expect(await attempt("203.0.113.66", "wrong")).toBe(401);
    expect(await attempt("203.0.113.66", "right password 9")).toBe(429); // the stranger's address is locked
    expect(await attempt("198.51.100.20", "right password 9")).toBe("ok"); // the operator's is not
    // A distributed guess (many addresses) still stops at the per-email limit, which counts the
    // stranger's failures above too: every guess up to it is checked, the next right password is not ...
    for (let i = 0; i < LOGIN_LIMITS.perEmail - LOGIN_LIMITS.perEmailAndAddress; i++)
      expect(await attempt(`192.0.2.${i}`, "wrong")).toBe(401);
    expect(await attempt("198.51.100.20", "right password 9")).toBe(429);
    // ... and an admin clears it at once from the command line.
    const unlocked = Bun.spawnSync(["./outpost", "admin", "unlock", "--email", "PAIR@example.test"], {
      cwd: `${import.meta.dir}/../..`,
      env: { ...process.env, DATABASE_URL: app.config.databaseUrl!, LOG_LEVEL: "silent" },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect({ code: unlocked.exitCode, out: unlocked.stdout.toString() }).toEqual({
      code: 0,
      out: "Sign-in unlocked for PAIR@example.test\n",
    });
    expect(await attempt("198.51.100.20", "right password 9")).toBe("ok");
  }, 60_000);

  test(`${LOGIN_LIMITS.perAddress} failures from one client address, spread over emails, block sign-in from it for every email`, async () => {
    await resetLoginThrottle();
    await createOperator(db, { email: "spread@example.test", password: "right password 4", role: "viewer" });
    const emails = Array.from({ length: 5 }, (_, i) => `guess-${i}@example.test`);
    const perEmail = LOGIN_LIMITS.perAddress / emails.length; // stays below the per-email limit
    expect(perEmail).toBeLessThan(LOGIN_LIMITS.perEmailAndAddress);
    for (const email of emails) {
      for (let attempt = 1; attempt <= perEmail; attempt++) {
        expect((await login(email, `wrong ${attempt}`)).status).toBe(401);
      }
    }
    const sessionsBefore = await db.$count(operatorSessions);
    // A fresh email with the right password: refused because of the address alone.
    const limited = await login("spread@example.test", "right password 4");
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    // The address is the TCP peer: a forged X-Forwarded-For does not make a new client.
    const forged = await login("spread@example.test", "right password 4", {
      "x-forwarded-for": "203.0.113.7",
    });
    expect(forged.status).toBe(429);
    expect(await db.$count(operatorSessions)).toBe(sessionsBefore);
    const keys = (await db.select().from(loginThrottle))
      .map((row) => row.key)
      .filter((k) => k.startsWith("ip:"));
    expect(keys).toEqual(["ip:127.0.0.1"]);
    await resetLoginThrottle();
    expect((await login("spread@example.test", "right password 4")).status).toBe(303);
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

  test("an expired session's writes are refused even with a valid CSRF token, and change nothing", async () => {
    const admin = await app.session("admin");
    // The same writes work while the session is alive (so the refusals below are the expiry's).
    const alive = await app.fetch("/settings/tokens", {
      ...form({ name: "while-alive", role: "viewer", _csrf: admin.csrf }),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: admin.cookie },
    });
    expect(alive.status).toBe(201);
    await db
      .update(operatorSessions)
      .set({ expiresAt: sql`now() - interval '1 minute'` })
      .where(eq(operatorSessions.operatorId, admin.operatorId));
    const tokensBefore = await db.$count(apiTokens);
    const jobsBefore = await queuedJobs("prune_sessions");

    const page = await app.fetch("/settings/tokens", {
      ...form({ name: "after-expiry", role: "admin", _csrf: admin.csrf }),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: admin.cookie },
    });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toStartWith("/login?next=");
    const api = await app.fetch("/api/v1/jobs/prune_sessions/run", {
      method: "POST",
      headers: { cookie: admin.cookie, "x-csrf-token": admin.csrf },
    });
    expect(api.status).toBe(401);
    expect((await api.json()).error.code).toBe("unauthorized");

    expect(await db.$count(apiTokens)).toBe(tokensBefore);
    expect(await db.$count(apiTokens, eq(apiTokens.name, "after-expiry"))).toBe(0);
    expect(await queuedJobs("prune_sessions")).toBe(jobsBefore);
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
    expect(await queuedJobs("prune_sessions")).toBe(0);

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
    expect((await revoked.json()).error.code).toBe("unauthorized");
    const tokensBefore = await db.$count(apiTokens);
    const create = await app.fetch("/settings/tokens", {
      ...form({ name: "from-revoked", role: "admin" }),
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Bearer ${admin}` },
    });
    expect(create.status).toBe(303); // a browser path: off to sign-in
    expect(create.headers.get("location")).toStartWith("/login?next=");
    // Nothing was queued or created by the refused calls.
    expect(await queuedJobs("prune_sessions")).toBe(0);
    expect(await db.$count(apiTokens)).toBe(tokensBefore);
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

describe("setup codes", () => {
  test("a newly issued setup code (the next start's) invalidates the earlier ones", async () => {
    const fresh = await startTestApp();
    expect(fresh.announcedSetupCodes).toHaveLength(1);
    const [first] = fresh.announcedSetupCodes;
    const second = await issueSetupCode(fresh.database.db); // what every start does while no operator exists
    expect(second).toMatch(/^[\w-]{12}$/);
    expect(await fresh.database.db.$count(setupCodes)).toBe(1);

    async function submitSetup(code: string) {
      const page = await fresh.fetch("/setup");
      const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
      const token = (await page.text()).match(/name="_csrf" value="([^"]+)"/)![1]!;
      const init = form({
        code,
        email: "first@example.test",
        password: "a long enough password",
        _csrf: token,
      });
      return fresh.fetch("/setup", {
        ...init,
        headers: { ...(init.headers as Record<string, string>), cookie },
      });
    }
    // Without the form's CSRF token (or with another browser's), setup is refused and creates nobody.
    const page = await fresh.fetch("/setup");
    const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
    for (const csrf of [undefined, csrfTokenFor(fresh.config.secretKey, "anon:someone-else")]) {
      const fields: Record<string, string> = {
        code: second!,
        email: "first@example.test",
        password: "a long enough password",
      };
      if (csrf) fields._csrf = csrf;
      const init = form(fields);
      const forged = await fresh.fetch("/setup", {
        ...init,
        headers: { ...(init.headers as Record<string, string>), cookie },
      });
      expect(forged.status).toBe(403);
      expect(await fresh.database.db.$count(operators)).toBe(0);
    }

    const stale = await submitSetup(first!);
    expect(stale.status).not.toBe(303);
    expect(await stale.text()).toContain("The setup code is not valid");
    expect(await fresh.database.db.$count(operators)).toBe(0);

    const current = await submitSetup(second!);
    expect(current.status).toBe(303);
    expect(current.headers.get("location")).toBe("/");
    expect(await fresh.database.db.$count(operators)).toBe(1);
    expect(await fresh.database.db.$count(setupCodes)).toBe(0);
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
