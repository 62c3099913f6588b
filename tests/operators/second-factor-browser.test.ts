// Second factor in real Chromium, with a virtual WebAuthn authenticator (CDP `WebAuthn.enable` +
// `WebAuthn.addVirtualAuthenticator`): enrol a passkey on the account page and sign in with it; the
// fresh-factor prompt before a terminal on a real device (agent, sshd, tunnel); an authenticator app
// enrolled where the role requires one, signing in with computed codes (a step of skew accepted, a
// replay refused); a recovery code used once; an admin's reset from Settings.
// WebAuthn wants a host name, not an IP address: the console runs as http://localhost:<port>.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as OTPAuth from "otpauth";
import type { BrowserContext, Page } from "playwright-core";
import { saveFactorPolicy } from "../../modules/operators/policy";
import { createOperator, type OperatorRole } from "../../modules/operators/service";
import { lastEvent } from "../audit/helpers";
import { startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser, screenshot } from "../helpers/browser";
import { startDevice, type TestDevice, waitForFirstHeartbeat } from "../terminal/helpers";

function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

const port = freePort();
const base = `http://localhost:${port}`;
const app = await startTestApp({ PORT: String(port), BASE_URL: base, BASE_DOMAIN: "mfa-browser.test" });
const db = app.database.db;
const browser = await launchBrowser();
const PASSWORD = "a long enough password";
let counter = 0;
let device: TestDevice | undefined;

afterAll(async () => {
  await device?.stop();
});

async function newOperator(role: OperatorRole) {
  const email = `${role}-${++counter}-${crypto.randomUUID().slice(0, 6)}@example.test`;
  return createOperator(db, { email, password: PASSWORD, role });
}

/** A virtual platform authenticator on `page` that answers at once (user present and verified). */
async function addAuthenticator(context: BrowserContext, page: Page) {
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

async function pageWithAuthenticator() {
  const context = await browser.newContext({ viewport: LAPTOP });
  const page = await context.newPage();
  return { context, page, authenticator: await addAuthenticator(context, page) };
}

/** The password step of sign-in, through the form. */
async function password(page: Page, email: string, next = "/jobs") {
  await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', PASSWORD);
  await page.click('form[action="/login"] button[type="submit"]');
  await page.waitForLoadState("load");
}

async function signOut(page: Page) {
  await page.click('form[action="/logout"] button');
  await page.waitForURL(`${base}/login`);
}

function codeAt(secret: string, steps: number) {
  const totp = new OTPAuth.TOTP({
    algorithm: "SHA1",
    digits: 6,
    period: 30,
    secret: OTPAuth.Secret.fromBase32(secret),
  });
  return totp.generate({ timestamp: app.clock.now() + steps * 30_000 });
}

/**
 * Moves the app's clock (which checks the codes) into the next 30 s step when the current one has less
 * than 5 s left, so the code's step is still the server's when it arrives.
 */
async function awayFromStepEdge() {
  const left = 30_000 - (app.clock.now() % 30_000);
  if (left < 5_000) await app.clock.advance(left + 1);
}

async function addPasskey(page: Page, name: string) {
  await page.goto(`${base}/account`);
  await page.fill('form[data-passkey="register"] input[name="name"]', name);
  await page.click('form[data-passkey="register"] [data-passkey-start]');
  await page.waitForSelector(`tr[data-factor-kind="webauthn"]`, { timeout: 20_000 });
}

describe("passkeys in Chromium", () => {
  test("enrol a passkey on the account page, then sign in with it", async () => {
    const operator = await newOperator("operator");
    const { context, page } = await pageWithAuthenticator();
    await password(page, operator.email);
    expect(page.url()).toBe(`${base}/jobs`); // no factor yet: the password signs in
    await addPasskey(page, "Laptop key");
    // The first factor comes with recovery codes, shown once.
    expect(await page.textContent("[data-recovery-codes]")).toContain("Your recovery codes");
    expect(await page.textContent('tr[data-factor-kind="webauthn"]')).toContain("Passkey / security key");
    expect(await page.inputValue('tr[data-factor-kind="webauthn"] input[name="name"]')).toBe("Laptop key");
    await screenshot(page, "account-second-factors");
    await signOut(page);

    const since = new Date();
    await password(page, operator.email);
    expect(page.url()).toBe(`${base}/login/second-factor?next=%2Fjobs`);
    await screenshot(page, "sign-in-second-factor");
    await page.click("[data-passkey-start]");
    await page.waitForURL(`${base}/jobs`, { timeout: 20_000 });
    const event = await lastEvent(app, "session.sign_in", since);
    expect(event).toMatchObject({ actor: operator.email, details: { second_factor: "passkey" } });
    await context.close();
  }, 90_000);

  test("a fresh passkey touch is asked before a terminal or a device web UI opens", async () => {
    device = await startDevice(app);
    await waitForFirstHeartbeat(app.database.sql, device!.id);
    const operator = await newOperator("operator");
    const { context, page, authenticator } = await pageWithAuthenticator();
    await password(page, operator.email);
    await addPasskey(page, "Desk key");
    await saveFactorPolicy(db, { fresh_operator: "0" }, "test");
    try {
      const terminalPage = `${base}/devices/${device.id}?tab=terminal`;
      await page.goto(terminalPage);
      // Enrolling proved a factor a moment ago: the first opening may use it. Age it, as later in the day.
      await app.database.sql`update operator_sessions set factor_verified_at = now() - interval '1 hour'
        where operator_id = ${operator.id}`;
      await page.click("[data-terminal-start]");
      await page.waitForURL(/\/account\/verify\?next=/, { timeout: 20_000 });
      expect(await page.textContent("main")).toContain("Confirm it is you");
      await screenshot(page, "fresh-factor-prompt");
      await page.click("[data-passkey-start]");
      await page.waitForURL(terminalPage, { timeout: 20_000 });
      await page.click("[data-terminal-start]");
      await page.waitForSelector('#terminal[data-state="connected"]', { timeout: 40_000 });
      expect(await lastEvent(app, "factor.verify", new Date(Date.now() - 60_000), 303)).toMatchObject({
        actor: operator.email,
        details: { method: "passkey" },
      });

      // The device's web UI too: "Open web UI" opens a tab, which asks first (the opening above used
      // the proof up: 0 minutes means one per opening), then shows the device page again.
      await page.goto(`${base}/devices/${device.id}?tab=remote`);
      await page.locator("[data-open-web-ui]").waitFor({ timeout: 30_000 });
      const [popup] = await Promise.all([
        page.waitForEvent("popup"),
        page.locator("[data-open-web-ui]").click(),
      ]);
      await popup.waitForURL(/\/account\/verify\?next=/, { timeout: 20_000 });
      // A virtual authenticator belongs to one page: the new tab gets one holding the same passkey.
      const { credentials } = await authenticator.cdp.send("WebAuthn.getCredentials", {
        authenticatorId: authenticator.authenticatorId,
      });
      const inPopup = await addAuthenticator(context, popup);
      for (const credential of credentials) {
        await inPopup.cdp.send("WebAuthn.addCredential", {
          authenticatorId: inPopup.authenticatorId,
          credential,
        });
      }
      await popup.click("[data-passkey-start]");
      await popup.waitForURL(`${base}/devices/${device.id}?tab=remote`, { timeout: 20_000 });
    } finally {
      await saveFactorPolicy(db, {}, "test");
      await context.close();
    }
  }, 150_000);
});

describe("authenticator apps and recovery codes in Chromium", () => {
  let email = "";
  let secret = "";
  let codes: string[] = [];
  let admin: BrowserContext;

  beforeAll(async () => {
    admin = await browser.newContext({ viewport: LAPTOP });
  });

  test("a role that requires a second factor sends a new viewer to enrol an authenticator app at sign-in", async () => {
    await saveFactorPolicy(db, { required_viewer: "on" }, "test");
    try {
      email = (await newOperator("viewer")).email;
      const page = await (await browser.newContext({ viewport: LAPTOP })).newPage();
      await password(page, email, "/devices");
      expect(page.url()).toBe(`${base}/login/enrol?next=%2Fdevices`);
      await page.click("[data-totp-start] button");
      await page.waitForSelector("[data-totp-qr]");
      secret = (await page.textContent("[data-totp-secret]"))!.trim();
      await screenshot(page, "sign-in-enrol-totp");
      await awayFromStepEdge();
      await page.fill('form[action="/login/enrol/totp/confirm"] input[name="code"]', codeAt(secret, 0));
      await page.click('form[action="/login/enrol/totp/confirm"] button');
      await page.waitForSelector("[data-recovery-codes]");
      codes = (await page.textContent("#recovery-codes"))!.trim().split("\n");
      expect(codes).toHaveLength(10);
      await page.click("[data-continue]");
      await page.waitForURL(`${base}/devices`);
      await page.context().close();
    } finally {
      await saveFactorPolicy(db, {}, "test");
    }
  }, 60_000);

  test("sign in with a code one step ahead; the same code again is refused", async () => {
    const page = await (await browser.newContext({ viewport: LAPTOP })).newPage();
    await awayFromStepEdge();
    const code = codeAt(secret, 1); // a phone clock 30 s fast
    await password(page, email);
    await page.fill("[data-totp-form] input[name=code]", code);
    await page.click("[data-totp-form] button");
    await page.waitForURL(`${base}/jobs`);
    await signOut(page);
    await password(page, email);
    await page.fill("[data-totp-form] input[name=code]", code);
    await page.click("[data-totp-form] button");
    await page.waitForLoadState("load");
    expect(page.url()).toStartWith(`${base}/login/second-factor`);
    expect(await page.textContent("[role=alert]")).toContain("That was not accepted");
    await page.context().close();
  }, 60_000);

  test("a recovery code signs in once", async () => {
    const page = await (await browser.newContext({ viewport: LAPTOP })).newPage();
    const useRecoveryCode = async () => {
      await password(page, email);
      await page.click("details summary");
      await page.fill("[data-recovery-form] input[name=code]", codes[0]!);
      await page.click("[data-recovery-form] button");
      await page.waitForLoadState("load");
    };
    await useRecoveryCode();
    expect(page.url()).toBe(`${base}/jobs`);
    await signOut(page);
    await useRecoveryCode();
    expect(page.url()).toStartWith(`${base}/login/second-factor`);
    expect(await page.textContent("[role=alert]")).toContain("That was not accepted");
    await page.context().close();
  }, 60_000);

  test("an admin resets the viewer's factors from Settings; the password alone signs them in again", async () => {
    const adminOperator = await newOperator("admin");
    const page = await admin.newPage();
    await password(page, adminOperator.email, "/settings");
    const row = page.locator("#operators tr", { hasText: email });
    expect(await row.locator("[data-factor-count]").getAttribute("data-factor-count")).toBe("1");
    const since = new Date();
    page.once("dialog", (dialog) => void dialog.accept());
    await row.locator('form[action$="/reset-factors"] button').click();
    await page.waitForSelector(".flash.success");
    expect(await page.textContent(".flash.success")).toContain(
      `Every second factor of ${email} was removed.`,
    );
    const event = await lastEvent(app, "operator.factors_reset", since);
    expect(event.actor).toBe(adminOperator.email);

    const viewer = await (await browser.newContext({ viewport: LAPTOP })).newPage();
    await password(viewer, email);
    expect(viewer.url()).toBe(`${base}/jobs`);
    await viewer.context().close();
    await admin.close();
  }, 60_000);
});
