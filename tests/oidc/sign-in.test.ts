// Single sign-on in Chromium against a real OpenID provider (oidc-provider on 127.0.0.1): from Outpost's
// sign-in page through the provider's sign-in and consent pages to the console, and every refusal.
import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { BrowserContext, Page } from "playwright-core";
import { listAudit } from "../../modules/audit/service";
import { oidcIdentities } from "../../modules/oidc/schema";
import { operatorSessions, operators } from "../../modules/operators/schema";
import { createOperator } from "../../modules/operators/service";
import { sha256Hex } from "../../modules/platform/crypto";
import { form, startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser, screenshot } from "../helpers/browser";
import { randomListenPort } from "../helpers/listener";
import { oidcEnv, startTestProvider } from "./provider";

const port = randomListenPort();
const appUrl = `http://127.0.0.1:${port}`;
const provider = await startTestProvider(appUrl);
const BREAK_GLASS = "root@example.test";
const app = await startTestApp({
  PORT: String(port),
  BASE_URL: appUrl,
  ...oidcEnv(provider),
  PASSWORD_SIGN_IN: "false",
  BREAK_GLASS_ADMIN_EMAIL: BREAK_GLASS,
});
const db = app.database.db;
// The break-glass admin exists from setup; without any operator the sign-in page leads to /setup.
await createOperator(db, { email: BREAK_GLASS, password: "break glass password", role: "admin" });
const browser = await launchBrowser();

/** From Outpost's sign-in page (asking for `next`) through the provider's pages, as `login`. */
async function signInThroughProvider(page: Page, login: string, next = "/devices", arrives = true) {
  await page.goto(`${app.url}/login?next=${encodeURIComponent(next)}`);
  await page.click("text=Sign in with Example SSO");
  await page.waitForURL(`${provider.issuer}/interaction/**`);
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', "anything");
  await page.click('button[type="submit"]');
  await page.waitForSelector("text=Continue");
  await page.click('button[type="submit"]');
  if (arrives) await page.waitForURL(`${app.url}/**`);
}

async function freshPage(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: LAPTOP });
  // The provider's development pages import a web font: nothing leaves this machine.
  await context.route(
    (url) => url.hostname !== "127.0.0.1",
    (route) => route.abort(),
  );
  return { context, page: await context.newPage() };
}

/**
 * Signs in at the provider but stops before the browser reaches Outpost's callback: the consent is
 * answered and the provider's redirects followed outside the page (with the browser's cookies), and the
 * callback URL they lead to is returned unvisited.
 */
async function heldCallback(context: BrowserContext, page: Page, login: string): Promise<string> {
  let callback = "";
  await page.route(
    (url) => url.href.startsWith(`${provider.issuer}/interaction/`),
    async (route) => {
      if (route.request().method() !== "POST" || !route.request().postData()?.includes("prompt=consent"))
        return route.continue();
      let response = await route.fetch({ maxRedirects: 0 });
      for (let hop = 0; hop < 5 && !callback; hop++) {
        const location = new URL(response.headers().location!, provider.issuer).href;
        if (location.startsWith(`${app.url}/auth/oidc/callback?`)) callback = location;
        else response = await context.request.get(location, { maxRedirects: 0 });
      }
      await route.fulfill({ status: 200, contentType: "text/plain", body: "held" });
    },
  );
  await signInThroughProvider(page, login, "/devices", false);
  expect(callback).toContain("code=");
  return callback;
}

async function sessionOf(context: BrowserContext) {
  const cookie = (await context.cookies()).find((c) => c.name === "outpost_session")!;
  return eq(operatorSessions.idHash, sha256Hex(cookie.value));
}

/** The actor's audit events as "action status", sorted: events of one request may share a millisecond. */
async function auditActions(actor?: string) {
  const { events } = await listAudit(app.database, actor ? { actor } : {});
  return events.map((event) => `${event.action} ${event.status}`).sort();
}

async function operatorByEmail(email: string) {
  const [row] = await db.select().from(operators).where(eq(operators.email, email));
  return row;
}

describe("single sign-on in a browser", () => {
  test("first sign-in creates the operator with the mapped role, linked by issuer and subject", async () => {
    provider.accounts.set("ada", {
      email: "ada@example.test",
      groups: ["staff", "outpost-ops", "unrelated"],
    });
    const { context, page } = await freshPage();
    await page.goto(`${app.url}/login`);
    await screenshot(page, "oidc-login");
    await signInThroughProvider(page, "ada", "/devices");
    expect(new URL(page.url()).pathname).toBe("/devices");
    expect(await page.locator("h1").first().textContent()).toBe("Devices");
    // staff → viewer and outpost-ops → operator: the highest wins.
    expect(await page.locator(".role-pill").textContent()).toBe("operator");
    expect(await page.locator(".sidebar .who").textContent()).toContain("ada@example.test");
    await screenshot(page, "oidc-signed-in");

    const ada = await operatorByEmail("ada@example.test");
    expect(ada?.role).toBe("operator");
    const [link] = await db.select().from(oidcIdentities).where(eq(oidcIdentities.operatorId, ada!.id));
    expect(link).toMatchObject({ issuer: provider.issuer, subject: "ada" });
    expect(await auditActions("ada@example.test")).toEqual(["oidc.sign_in 303", "operator.create 201"]);
    await context.close();
  }, 60_000);

  test("a later sign-in finds the same operator by subject and follows the mapping's role", async () => {
    const before = await operatorByEmail("ada@example.test");
    provider.accounts.set("ada", { email: "ada@example.test", groups: ["outpost-admins"] });
    const { context, page } = await freshPage();
    await signInThroughProvider(page, "ada", "/settings");
    expect(new URL(page.url()).pathname).toBe("/settings");
    expect(await page.locator(".role-pill").textContent()).toBe("admin");
    const after = await operatorByEmail("ada@example.test");
    expect(after?.id).toBe(before!.id);
    expect(after?.role).toBe("admin");
    expect(await auditActions("ada@example.test")).toEqual([
      "oidc.sign_in 303",
      "oidc.sign_in 303",
      "operator.create 201",
      "operator.role 200",
    ]);
    await context.close();
  }, 60_000);

  test("a person whose groups map to no role is refused with a clear page, and nothing is created", async () => {
    provider.accounts.set("mallory", { email: "mallory@example.test", groups: ["marketing"] });
    const { context, page } = await freshPage();
    await signInThroughProvider(page, "mallory");
    expect(new URL(page.url()).pathname).toBe("/auth/oidc/callback");
    expect(await page.locator("h1").textContent()).toBe("Sign-in refused");
    expect(await page.locator(".flash.error").textContent()).toContain("None of your groups (marketing)");
    await screenshot(page, "oidc-refused");
    expect(await operatorByEmail("mallory@example.test")).toBeUndefined();
    expect((await context.cookies()).map((cookie) => cookie.name)).not.toContain("outpost_session");
    expect(await auditActions("mallory@example.test")).toEqual(["oidc.sign_in_refused 403"]);
    await page.goto(`${app.url}/devices`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await context.close();
  }, 60_000);

  test("a provider account whose email an unlinked operator has is refused, not merged into that operator", async () => {
    const eve = await createOperator(db, {
      email: "eve@example.test",
      password: "eve's own password",
      role: "admin",
    });
    provider.accounts.set("eve-impostor", { email: "eve@example.test", groups: ["outpost-admins"] });
    const { context, page } = await freshPage();
    await signInThroughProvider(page, "eve-impostor");
    expect(await page.locator(".flash.error").textContent()).toContain(
      "An Outpost operator with the email eve@example.test already exists and is not linked",
    );
    expect(await db.select().from(oidcIdentities).where(eq(oidcIdentities.operatorId, eve.id))).toEqual([]);
    expect(await db.select().from(operatorSessions).where(eq(operatorSessions.operatorId, eve.id))).toEqual(
      [],
    );
    expect(await auditActions("eve@example.test")).toEqual(["oidc.sign_in_refused 409"]);
    await context.close();
  }, 60_000);

  test("an operator whose email is taken links their provider account after signing in with their password", async () => {
    provider.accounts.set("root-sso", { email: BREAK_GLASS, groups: ["outpost-admins"] });
    const { context, page } = await freshPage();
    await signInThroughProvider(page, "root-sso");
    expect(await page.locator(".flash.error").textContent()).toContain("already exists and is not linked");
    await page.click("text=Link to my Outpost account");
    await page.waitForURL(`${app.url}/login?next=%2Fauth%2Foidc%2Flink`);
    await page.fill('input[name="email"]', BREAK_GLASS);
    await page.fill('input[name="password"]', "break glass password");
    await page.click('form[action="/login"] button[type="submit"]');
    await page.waitForURL(`${app.url}/auth/oidc/link`);
    await screenshot(page, "oidc-link");
    // Still signed in at the provider as root-sso, so the link goes straight through its consent.
    await page.click("text=Link to Example SSO");
    await page.waitForURL(`${app.url}/auth/oidc/link`);
    expect(await page.locator(".card p").first().textContent()).toContain(
      "linked to the Example SSO account “root-sso”",
    );
    const root = await operatorByEmail(BREAK_GLASS);
    const [link] = await db.select().from(oidcIdentities).where(eq(oidcIdentities.subject, "root-sso"));
    expect(link?.operatorId).toBe(root!.id);
    expect(await auditActions(BREAK_GLASS)).toEqual(
      expect.arrayContaining(["oidc.link_start 303", "oidc.link 200", "oidc.sign_in 303"]),
    );

    await page.click("text=Sign out");
    await page.click("text=Sign in again");
    await page.click("text=Sign in with Example SSO");
    await page.waitForURL(`${app.url}/`);
    expect(await page.locator(".sidebar .who").textContent()).toContain(BREAK_GLASS);
    await context.close();
  }, 90_000);

  test("cancelling at the provider comes back as a refusal that names the provider's answer", async () => {
    const { context, page } = await freshPage();
    await page.goto(`${app.url}/login`);
    await page.click("text=Sign in with Example SSO");
    await page.click("text=[ Cancel ]");
    await page.waitForURL(`${app.url}/auth/oidc/callback?**`);
    expect(await page.locator(".flash.error").textContent()).toBe(
      "Example SSO did not sign you in (access_denied).",
    );
    const [event] = (await listAudit(app.database, { action: "oidc.sign_in_failed" })).events;
    expect(event?.details.reason).toBe("End-User aborted interaction");
    await context.close();
  }, 60_000);

  test("a tampered state is refused, and so is a callback replayed after it was used", async () => {
    provider.accounts.set("sam", { groups: ["outpost-ops"] });
    const { context, page } = await freshPage();
    const callback = await heldCallback(context, page, "sam");
    const tampered = new URL(callback);
    tampered.searchParams.set("state", `${tampered.searchParams.get("state")}x`);
    await page.goto(tampered.href);
    expect(await page.locator("h1").textContent()).toBe("Sign-in refused");
    expect(await page.locator(".flash.error").textContent()).toContain("could not be verified");
    expect(await operatorByEmail("sam@example.test")).toBeUndefined();
    const [event] = (await listAudit(app.database, { action: "oidc.sign_in_failed" })).events;
    expect(event?.status).toBe(400);
    expect(String(event?.details.reason)).toContain("state");
    // The refused attempt used up this browser's pending sign-in: the genuine callback is refused too.
    await page.goto(callback);
    expect(await page.locator(".flash.error").textContent()).toContain("could not be verified");
    expect(await operatorByEmail("sam@example.test")).toBeUndefined();
    await context.close();
  }, 60_000);

  test("an ID token with another nonce than the one this sign-in sent is refused", async () => {
    const { context, page } = await freshPage();
    // The provider is asked with a different nonce, so it signs an ID token carrying that one.
    await page.route(
      (url) => url.pathname === "/auth/oidc/login",
      async (route) => {
        const response = await route.fetch({ maxRedirects: 0 });
        const location = new URL(response.headers().location!);
        location.searchParams.set("nonce", "a-nonce-outpost-never-issued");
        await route.fulfill({ response, headers: { ...response.headers(), location: location.href } });
      },
    );
    await signInThroughProvider(page, "sam");
    expect(await page.locator(".flash.error").textContent()).toContain("could not be verified");
    expect(await operatorByEmail("sam@example.test")).toBeUndefined();
    const [event] = (await listAudit(app.database, { action: "oidc.sign_in_failed" })).events;
    expect(String(event?.details.reason)).toContain("nonce");
    await context.close();
  }, 60_000);

  test("a callback finished in another browser (no flow cookie) is refused: no login CSRF", async () => {
    const first = await freshPage();
    const callback = await heldCallback(first.context, first.page, "sam");
    const second = await freshPage();
    await second.page.goto(callback);
    expect(await second.page.locator(".flash.error").textContent()).toContain("could not be verified");
    expect(await operatorByEmail("sam@example.test")).toBeUndefined();
    // The browser that started it still finishes it.
    await first.page.goto(callback);
    expect(await first.page.locator(".role-pill").textContent()).toBe("operator");
    await first.context.close();
    await second.context.close();
  }, 60_000);

  test("sign-out ends the Outpost session and offers to end the provider's", async () => {
    provider.accounts.set("ada", { email: "ada@example.test", groups: ["outpost-ops"] });
    const { context, page } = await freshPage();
    await signInThroughProvider(page, "ada", "/");
    const session = await sessionOf(context);
    expect(await db.select().from(operatorSessions).where(session)).toHaveLength(1);

    await page.click("text=Sign out");
    await page.waitForURL(`${app.url}/auth/oidc/signed-out`);
    expect(await page.locator(".flash.info").textContent()).toBe("You are signed out.");
    await screenshot(page, "oidc-signed-out");
    expect(await db.select().from(operatorSessions).where(session)).toEqual([]);
    await page.goto(`${app.url}/`);
    expect(new URL(page.url()).pathname).toBe("/login");

    // Still signed in at the provider, so single sign-on lets them straight back in (what the offer is for).
    await page.click("text=Sign in with Example SSO");
    await page.waitForURL(`${app.url}/`);
    expect(await page.locator(".role-pill").textContent()).toBe("operator");
    await page.click("text=Sign out");
    await page.click("text=Also sign out of Example SSO");
    await page.waitForURL(`${provider.issuer}/session/end**`);
    await page.click('button[name="logout"]');
    await page.waitForURL(`${app.url}/login`);
    // The provider's session is over too: the next single sign-on asks who you are.
    await page.click("text=Sign in with Example SSO");
    await page.waitForURL(`${provider.issuer}/interaction/**`);
    expect(await page.locator('input[name="login"]').count()).toBe(1);
    await context.close();
  }, 90_000);
});

describe("password sign-in turned off", () => {
  async function passwordSignIn(email: string, password: string) {
    const page = await app.fetch("/login");
    const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
    const html = await page.text();
    expect(html).toContain("Password sign-in is kept for the break-glass administrator.");
    const token = html.match(/name="_csrf" value="([^"]+)"/)![1]!;
    const init = form({ email, password, _csrf: token, next: "/" });
    return app.fetch("/login", { ...init, headers: { ...(init.headers as Record<string, string>), cookie } });
  }

  test("an operator with the right password is refused; the break-glass admin signs in", async () => {
    await createOperator(db, { email: "local@example.test", password: "local password 1", role: "admin" });
    const refused = await passwordSignIn("local@example.test", "local password 1");
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("Password sign-in is turned off: use “Sign in with Example SSO”.");
    expect(refused.headers.getSetCookie().some((cookie) => cookie.startsWith("outpost_session="))).toBe(
      false,
    );

    // A wrong password gets the usual answer, so the refusal tells a stranger nothing.
    expect((await passwordSignIn("local@example.test", "wrong password 1")).status).toBe(401);

    const admitted = await passwordSignIn(BREAK_GLASS, "break glass password");
    expect(admitted.status).toBe(303);
    expect(admitted.headers.getSetCookie().some((cookie) => cookie.startsWith("outpost_session="))).toBe(
      true,
    );
    const { events } = await listAudit(app.database, {
      actor: "local@example.test",
      action: "session.sign_in_failed",
    });
    expect(events.map((event) => event.status)).toEqual([401, 403]);
  });
});
