// Second factor over real HTTP and a real database: TOTP enrolment from the account page, sign-in in
// two steps (the pending cookie grants nothing else), replay and clock skew, recovery codes, lockout,
// required enrolment, an admin's reset, the per-role fresh factor before a terminal, and the audit log.
// Passkeys are driven in Chromium (second-factor-browser.test.ts).
import { beforeEach, describe, expect, test } from "bun:test";
import * as OTPAuth from "otpauth";
import { requireFreshFactor } from "../../modules/operators/policy";
import { loginThrottle } from "../../modules/operators/schema";
import { verifyTotpCode } from "../../modules/operators/totp";
import { SESSION_COOKIE } from "../../modules/platform/access";
import { lastEvent } from "../audit/helpers";
import { approvedDevice } from "../devices/helpers";
import { form, startTestApp } from "../helpers/app";

const app = await startTestApp();
const db = app.database.db;
const PASSWORD = "correct horse battery"; // what app.session() gives its operators
const admin = await app.session("admin");

beforeEach(async () => {
  // Every sign-in here comes from 127.0.0.1: start each test with no failures counted.
  await db.delete(loginThrottle);
});

function totp(secret: string) {
  return new OTPAuth.TOTP({
    algorithm: "SHA1",
    digits: 6,
    period: 30,
    secret: OTPAuth.Secret.fromBase32(secret),
  });
}

/** A code for `steps` steps from now (what an authenticator with a clock that far off shows). */
const codeAt = (secret: string, steps = 0) =>
  totp(secret).generate({ timestamp: Date.now() + steps * 30_000 });

/** Waits (at most 6 s) until the current 30 s step has at least 4 s left, so a code cannot expire in flight. */
async function awayFromStepEdge() {
  for (let i = 0; i < 60 && 30 - ((Date.now() / 1000) % 30) < 4; i++) await Bun.sleep(100);
}

function sessionCookieOf(response: Response): string | undefined {
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  const pair = cookie?.split(";")[0];
  return pair && pair !== `${SESSION_COOKIE}=` ? pair : undefined;
}

const hidden = (html: string, name: string) =>
  html.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1] ?? "";

type Session = { cookie: string; csrf: string };

function post(session: Session, path: string, fields: Record<string, string> = {}) {
  const init = form({ ...fields, _csrf: session.csrf });
  return app.fetch(path, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), cookie: session.cookie },
  });
}

/** Adds an authenticator app from the account page; returns its secret and the recovery codes shown. */
async function enrolTotp(session: Session, name = "Phone") {
  const started = await post(session, "/account/totp", { name });
  expect(started.status).toBe(200);
  const page = await started.text();
  const secret = page.match(/data-totp-secret[^>]*>([A-Z2-7]+)</)![1]!;
  expect(page).toContain('src="data:image/svg+xml;base64,');
  await awayFromStepEdge();
  const confirmed = await post(session, "/account/totp/confirm", {
    factor_id: hidden(page, "factor_id"),
    code: codeAt(secret),
  });
  // The first factor comes with recovery codes (201, shown once); a later one just goes back to the page.
  if (confirmed.status === 303) return { secret, codes: [] };
  expect(confirmed.status).toBe(201);
  const codes = (await confirmed.text())
    .match(/id="recovery-codes"[^>]*>([^<]+)</)![1]!
    .trim()
    .split("\n");
  return { secret, codes };
}

/** The password step, from a fresh browser: returns where it leads and the cookie it set. */
async function passwordStep(email: string) {
  const login = await app.fetch("/login");
  const anon = login.headers.get("set-cookie")!.split(";")[0]!;
  const init = form({ email, password: PASSWORD, _csrf: hidden(await login.text(), "_csrf"), next: "/jobs" });
  const response = await app.fetch("/login", {
    ...init,
    headers: { ...(init.headers as Record<string, string>), cookie: anon },
  });
  expect(response.status).toBe(303);
  return { location: response.headers.get("location")!, cookie: sessionCookieOf(response)! };
}

/** The second step with `fields` (method and code), under the pending cookie. */
async function factorStep(pending: string, fields: Record<string, string>) {
  const page = await app.fetch("/login/second-factor?next=%2Fjobs", { headers: { cookie: pending } });
  expect(page.status).toBe(200);
  return post({ cookie: pending, csrf: hidden(await page.text(), "_csrf") }, "/login/second-factor", {
    next: "/jobs",
    ...fields,
  });
}

async function savePolicy(fields: Record<string, string>) {
  const response = await post(admin, "/settings/second-factor", fields);
  expect(response.status).toBe(303);
}

describe("TOTP", () => {
  test("enrol from the account page, then sign-in asks for a code; the pending cookie grants nothing else", async () => {
    const operator = await app.session("operator");
    const since = new Date();
    const { secret, codes } = await enrolTotp(operator);
    expect(codes).toHaveLength(10);
    expect((await lastEvent(app, "factor.enrol_totp", since)).actor).toBe(operator.email);
    // Secret stored sealed, recovery codes only hashed.
    const [row] = await app.database.sql<{ totp_secret: string }[]>`
      select totp_secret from operator_factors where operator_id = ${operator.operatorId}`;
    expect(row!.totp_secret).not.toContain(secret);
    const stored = await app.database
      .sql`select code_hash from recovery_codes where operator_id = ${operator.operatorId}`;
    expect(stored.map((r) => r.code_hash)).not.toContain(codes[0]);

    const step = await passwordStep(operator.email);
    expect(step.location).toBe("/login/second-factor?next=%2Fjobs");
    // Half signed in: pages send the browser to sign in, the API says 401.
    const page = await app.fetch("/jobs", { headers: { cookie: step.cookie } });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toStartWith("/login?next=");
    expect((await app.fetch("/api/v1/devices", { headers: { cookie: step.cookie } })).status).toBe(401);

    await awayFromStepEdge();
    const signedIn = await factorStep(step.cookie, { method: "totp", code: codeAt(secret, 1) });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get("location")).toBe("/jobs");
    const full = sessionCookieOf(signedIn)!;
    expect(full).not.toBe(step.cookie); // a new cookie value once signed in
    expect((await app.fetch("/jobs", { headers: { cookie: full } })).status).toBe(200);
    // The pending cookie itself is gone.
    expect((await app.fetch("/login/second-factor", { headers: { cookie: step.cookie } })).status).toBe(303);
    const event = await lastEvent(app, "session.sign_in", since);
    expect(event.details).toEqual({ second_factor: "totp" });
  }, 60_000);

  test("a code is accepted once: the same code again is refused, a wrong one counts as a failure", async () => {
    const operator = await app.session("operator");
    const { secret } = await enrolTotp(operator);
    await awayFromStepEdge();
    const code = codeAt(secret, 1); // the enrolment used this step's code
    const first = await factorStep((await passwordStep(operator.email)).cookie, { method: "totp", code });
    expect(first.status).toBe(303);
    const since = new Date();
    const replay = await factorStep((await passwordStep(operator.email)).cookie, { method: "totp", code });
    expect(replay.status).toBe(401);
    expect(await replay.text()).toContain("That was not accepted");
    expect(sessionCookieOf(replay)).toBeUndefined();
    const failed = await lastEvent(app, "session.factor_failed", since);
    expect(failed).toMatchObject({ actor: operator.email, status: 401, details: { method: "totp" } });
  }, 60_000);

  test("one step of clock skew either way is accepted, two are not; a step older than the last used is refused", async () => {
    const operator = await app.session("operator");
    const { secret } = await enrolTotp(operator);
    // A clock injected 10 minutes ahead, so the steps below are all newer than the enrolment's.
    const now = Date.now() + 600_000;
    const at = (steps: number) => totp(secret).generate({ timestamp: now + steps * 30_000 });
    const check = (code: string) =>
      verifyTotpCode(db, app.config.secretKey, { operatorId: operator.operatorId, code, now });
    expect(await check(at(-2))).toBeUndefined();
    expect(await check(at(-1))).toBeDefined();
    expect(await check(at(2))).toBeUndefined();
    expect(await check(at(1))).toBeDefined();
    expect(await check(at(1))).toBeUndefined(); // replay
    expect(await check(at(0))).toBeUndefined(); // older than the last accepted step
    expect(await check("12345")).toBeUndefined();
  }, 60_000);

  test("failed factor attempts count toward the sign-in lockout, and a right password does not reset them", async () => {
    const operator = await app.session("operator");
    const { secret } = await enrolTotp(operator);
    const first = (await passwordStep(operator.email)).cookie;
    for (let i = 0; i < 3; i++) {
      expect((await factorStep(first, { method: "totp", code: "000000" })).status).toBe(401);
    }
    // The right password again buys no fresh guesses: the counter goes on.
    const pending = (await passwordStep(operator.email)).cookie;
    for (let i = 0; i < 2; i++) {
      expect((await factorStep(pending, { method: "totp", code: "000000" })).status).toBe(401);
    }
    await awayFromStepEdge();
    const locked = await factorStep(pending, { method: "totp", code: codeAt(secret, 1) });
    expect(locked.status).toBe(429);
    expect(locked.headers.get("retry-after")).toBeTruthy();
    // The password step is locked for this email from here too.
    const login = await app.fetch("/login");
    const init = form({
      email: operator.email,
      password: PASSWORD,
      _csrf: hidden(await login.text(), "_csrf"),
    });
    const again = await app.fetch("/login", {
      ...init,
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: login.headers.get("set-cookie")!.split(";")[0]!,
      },
    });
    expect(again.status).toBe(429);
  }, 60_000);
});

describe("recovery codes", () => {
  test("a recovery code signs in once", async () => {
    const operator = await app.session("viewer");
    const { codes } = await enrolTotp(operator);
    const used = await factorStep((await passwordStep(operator.email)).cookie, {
      method: "recovery",
      code: codes[3]!.toUpperCase(), // typed in capitals: still the code
    });
    expect(used.status).toBe(303);
    const again = await factorStep((await passwordStep(operator.email)).cookie, {
      method: "recovery",
      code: codes[3]!,
    });
    expect(again.status).toBe(401);
    const account = await app.fetch("/account", { headers: { cookie: sessionCookieOf(used)! } });
    expect(await account.text()).toContain("9 unused recovery codes");
  }, 60_000);
});

describe("policy", () => {
  test("a required second factor sends an operator without one to enrol at sign-in, and keeps their last one", async () => {
    await savePolicy({ required_operator: "on" });
    try {
      const operator = await app.session("operator");
      const step = await passwordStep(operator.email);
      expect(step.location).toBe("/login/enrol?next=%2Fjobs");
      expect((await app.fetch("/jobs", { headers: { cookie: step.cookie } })).status).toBe(303);
      const page = await app.fetch(step.location, { headers: { cookie: step.cookie } });
      const pending = { cookie: step.cookie, csrf: hidden(await page.text(), "_csrf") };
      const started = await (
        await post(pending, "/login/enrol/totp", { name: "Work phone", next: "/jobs" })
      ).text();
      const secret = started.match(/data-totp-secret[^>]*>([A-Z2-7]+)</)![1]!;
      await awayFromStepEdge();
      const wrong = await post(pending, "/login/enrol/totp/confirm", {
        factor_id: hidden(started, "factor_id"),
        code: "000000",
        next: "/jobs",
      });
      expect(wrong.status).toBe(400);
      expect(sessionCookieOf(wrong)).toBeUndefined();
      const done = await post(pending, "/login/enrol/totp/confirm", {
        factor_id: hidden(started, "factor_id"),
        code: codeAt(secret),
        next: "/jobs",
      });
      expect(done.status).toBe(201);
      const html = await done.text();
      expect(html).toContain("Your recovery codes");
      expect(html).toContain('href="/jobs"');
      const full = sessionCookieOf(done)!;
      expect((await app.fetch("/jobs", { headers: { cookie: full } })).status).toBe(200);

      // Their only factor stays while the role requires one.
      const [factor] = await app.database.sql<{ id: string }[]>`
        select id from operator_factors where operator_id = ${operator.operatorId}`;
      const account = await app.fetch("/account", { headers: { cookie: full } });
      const csrf = hidden(await account.text(), "_csrf");
      const removal = await post({ cookie: full, csrf }, `/account/factors/${factor!.id}/delete`);
      expect(removal.status).toBe(303);
      const left = await app.database
        .sql`select 1 from operator_factors where operator_id = ${operator.operatorId}`;
      expect(left).toHaveLength(1);
    } finally {
      await savePolicy({});
    }
  }, 90_000);

  test("an admin resets another operator's factors (audited); they enrol again when required", async () => {
    const operator = await app.session("operator");
    await enrolTotp(operator);
    const since = new Date();
    const reset = await post(admin, `/settings/operators/${operator.operatorId}/reset-factors`);
    expect(reset.status).toBe(303);
    const left = await app.database.sql`
      select 1 from operator_factors where operator_id = ${operator.operatorId}
      union all select 1 from recovery_codes where operator_id = ${operator.operatorId}`;
    expect(left).toHaveLength(0);
    const event = await lastEvent(app, "operator.factors_reset", since);
    expect(event).toMatchObject({
      actor: admin.email,
      target: `operator:${operator.operatorId}`,
      status: 303,
    });
    // Without a factor and without the requirement: the password signs in again.
    expect((await passwordStep(operator.email)).location).toBe("/jobs");
    // An operator (not an admin) cannot reset anyone's factors.
    const other = await app.session("operator");
    expect((await post(other, `/settings/operators/${operator.operatorId}/reset-factors`)).status).toBe(403);
  }, 60_000);

  test("an admin who lost every factor is reset from the command line (audited)", async () => {
    const locked = await app.session("admin");
    await enrolTotp(locked);
    const since = new Date();
    const run = (email: string) =>
      Bun.spawnSync(["./outpost", "admin", "reset-factors", "--email", email], {
        cwd: `${import.meta.dir}/../..`,
        env: { ...process.env, DATABASE_URL: app.config.databaseUrl!, LOG_LEVEL: "silent" },
        stdout: "pipe",
        stderr: "pipe",
      });
    const done = run(locked.email.toUpperCase());
    expect({ code: done.exitCode, out: done.stdout.toString() }).toEqual({
      code: 0,
      out: `Removed 1 second factors of ${locked.email.toUpperCase()}\n`,
    });
    expect(
      await app.database.sql`select 1 from operator_factors where operator_id = ${locked.operatorId}`,
    ).toHaveLength(0);
    expect(await lastEvent(app, "operator.factors_reset", since)).toMatchObject({
      actor: "cli",
      target: `email:${locked.email}`,
    });
    const unknown = run("nobody@example.test");
    expect({ code: unknown.exitCode, err: unknown.stderr.toString() }).toEqual({
      code: 2,
      err: "outpost: No operator with email nobody@example.test\n",
    });
  }, 60_000);

  test("a bad fresh-factor time is refused and changes nothing", async () => {
    const response = await post(admin, "/settings/second-factor", {
      required_admin: "on",
      fresh_operator: "-3",
    });
    expect(response.status).toBe(303);
    const rows = await app.database.sql`select 1 from second_factor_policy where required`;
    expect(rows).toHaveLength(0);
  });
});

describe("a fresh factor before reaching a device", () => {
  test("a terminal asks for a fresh factor; once given it counts for one opening (0 minutes) or N minutes", async () => {
    const device = await approvedDevice(app);
    // Offline, so a terminal that passes the factor check stops at 409 device_offline.
    await app.database
      .sql`update devices set last_seen_at = now() - interval '1 day' where id = ${device.id}`;
    const operator = await app.session("operator");
    const phone = (await enrolTotp(operator, "Phone")).secret;
    const tablet = (await enrolTotp(operator, "Tablet")).secret;
    // Enrolling proved a factor: make it old, as it would be later in the day.
    await app.database.sql`update operator_sessions set factor_verified_at = now() - interval '1 hour'
      where operator_id = ${operator.operatorId}`;
    const openTerminal = () =>
      app.fetch(`/devices/${device.id}/terminal`, {
        method: "POST",
        headers: { cookie: operator.cookie, "x-csrf-token": operator.csrf, accept: "application/json" },
      });
    const verify = async (secret: string) => {
      await awayFromStepEdge();
      const response = await post(operator, "/account/verify", {
        method: "totp",
        code: codeAt(secret, 1),
        next: `/devices/${device.id}?tab=terminal`,
      });
      expect(response.status).toBe(303);
      expect(response.headers.get("location")).toBe(`/devices/${device.id}?tab=terminal`);
    };
    // No policy: nothing asked (the device is offline: the terminal fails further on).
    expect((await openTerminal()).status).toBe(409);

    await savePolicy({ fresh_operator: "0" });
    try {
      const refused = await openTerminal();
      expect(refused.status).toBe(403);
      const body = (await refused.json()) as { error: { code: string; details: { verify_url: string } } };
      expect(body.error.code).toBe("fresh_factor_required");
      expect(body.error.details.verify_url).toBe(
        `/account/verify?next=${encodeURIComponent(`/devices/${device.id}?tab=terminal`)}`,
      );
      const prompt = await app.fetch(body.error.details.verify_url, { headers: { cookie: operator.cookie } });
      expect(await prompt.text()).toContain("Code from your authenticator app");
      await verify(phone);
      expect((await openTerminal()).status).toBe(409); // past the factor check
      expect((await openTerminal()).status).toBe(403); // 0 minutes: used up by that opening

      await savePolicy({ fresh_operator: "10" });
      await verify(tablet); // (the phone's next code may still be this step's, used above)
      expect((await openTerminal()).status).toBe(409);
      expect((await openTerminal()).status).toBe(409); // still fresh within 10 minutes
      await app.database.sql`update operator_sessions set factor_verified_at = now() - interval '11 minutes'
        where operator_id = ${operator.operatorId}`;
      expect((await openTerminal()).status).toBe(403);

      // Another role's policy is its own; API tokens are never asked.
      const admins = await app.session("admin");
      expect(
        (
          await app.fetch(`/devices/${device.id}/terminal`, {
            method: "POST",
            headers: { cookie: admins.cookie, "x-csrf-token": admins.csrf, accept: "application/json" },
          })
        ).status,
      ).toBe(409);
      await requireFreshFactor(db, { kind: "token", tokenId: "t", name: "ci", role: "operator" }, "/");
    } finally {
      await savePolicy({});
    }
  }, 90_000);

  test("a wrong code at the prompt is refused, counted and audited", async () => {
    const operator = await app.session("operator");
    await enrolTotp(operator);
    const since = new Date();
    const response = await post(operator, "/account/verify", { method: "totp", code: "000000", next: "/" });
    expect(response.status).toBe(401);
    expect(await response.text()).toContain("That was not accepted");
    expect((await lastEvent(app, "factor.verify", since, 401)).actor).toBe(operator.email);
    const [throttle] = await app.database.sql<{ failures: number }[]>`
      select failures from login_throttle where key = ${`email:${operator.email}`}`;
    expect(throttle!.failures).toBe(1);
  }, 60_000);
});

describe("the account page", () => {
  test("rename and remove a factor; removal of the last one drops the recovery codes", async () => {
    const operator = await app.session("viewer");
    await enrolTotp(operator);
    const [factor] = await app.database.sql<{ id: string }[]>`
      select id from operator_factors where operator_id = ${operator.operatorId}`;
    const since = new Date();
    expect(
      (await post(operator, `/account/factors/${factor!.id}/rename`, { name: '"><b>Old phone' })).status,
    ).toBe(303);
    const page = await (await app.fetch("/account", { headers: { cookie: operator.cookie } })).text();
    // In an attribute the quote is what must not pass: it stays inside the value.
    expect(page).toContain('value="&#34;><b>Old phone"');
    expect((await lastEvent(app, "factor.rename", since)).target).toBe(`factor:${factor!.id}`);
    // Someone else's factor is not theirs to remove.
    const other = await app.session("viewer");
    await post(other, `/account/factors/${factor!.id}/delete`);
    expect(await app.database.sql`select 1 from operator_factors where id = ${factor!.id}`).toHaveLength(1);
    expect((await post(operator, `/account/factors/${factor!.id}/delete`)).status).toBe(303);
    expect(await app.database.sql`select 1 from operator_factors where id = ${factor!.id}`).toHaveLength(0);
    expect(
      await app.database.sql`select 1 from recovery_codes where operator_id = ${operator.operatorId}`,
    ).toHaveLength(0);
    expect((await lastEvent(app, "factor.remove", since)).status).toBe(303);
  }, 60_000);
});
