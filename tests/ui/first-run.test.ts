import { describe, expect, test } from "bun:test";
import { SESSION_COOKIE } from "../../modules/platform/access";
import { startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser, PHONE, screenshot } from "../helpers/browser";

const app = await startTestApp();
const browser = await launchBrowser();

describe("first run in a browser", () => {
  test("/ leads to /setup; the console code creates the admin, who signs in and out", async () => {
    // The code as the console shows it: the one the app announced at start (printed outside tests).
    expect(app.announcedSetupCodes).toHaveLength(1);
    const code = app.announcedSetupCodes[0];
    expect(code).toMatch(/^[\w-]{12}$/);
    const page = await browser.newPage({ viewport: LAPTOP });
    await page.goto(`${app.url}/`);
    expect(new URL(page.url()).pathname).toBe("/setup");
    await screenshot(page, "setup");

    await page.fill('input[name="code"]', "wrong-code-00");
    await page.fill('input[name="email"]', "admin@example.test");
    await page.fill('input[name="password"]', "a long enough password");
    await page.click('button[type="submit"]');
    expect(await page.locator(".field-error").textContent()).toBe("The setup code is not valid");
    expect(await page.inputValue('input[name="email"]')).toBe("admin@example.test");

    await page.fill('input[name="code"]', code!);
    await page.fill('input[name="password"]', "a long enough password");
    await page.click('button[type="submit"]');
    await page.waitForURL(`${app.url}/`);
    expect(await page.locator(".flash.success").textContent()).toContain("administrator account is ready");
    expect(await page.locator("h1").textContent()).toBe("Dashboard");
    await screenshot(page, "dashboard-after-setup");

    // Setup is closed once an operator exists.
    await page.goto(`${app.url}/setup`);
    expect(new URL(page.url()).pathname).toBe("/login");

    await page.goto(`${app.url}/`);
    await page.click("text=Sign out");
    await page.waitForURL(/\/login$/);
    expect(await page.locator(".flash.info").textContent()).toBe("You are signed out.");
    await page.goto(`${app.url}/jobs`);
    expect(new URL(page.url()).pathname).toBe("/login");

    await page.fill('input[name="email"]', "admin@example.test");
    await page.fill('input[name="password"]', "a long enough password");
    await page.click('button[type="submit"]');
    await page.waitForURL(`${app.url}/jobs`);
    expect(await page.locator("h1").textContent()).toBe("Jobs");
    await screenshot(page, "jobs");

    await page.setViewportSize(PHONE);
    await page.goto(`${app.url}/settings`);
    await screenshot(page, "settings-phone");
    const hidden = await page.locator(".sidebar").boundingBox();
    expect(hidden!.x + hidden!.width).toBeLessThanOrEqual(0);
    await page.click("[data-nav-toggle]");
    // The slide-in transition, until the sidebar is in place.
    await page.waitForFunction(
      () => document.querySelector(".sidebar")?.getBoundingClientRect().x === 0,
      undefined,
      {
        timeout: 5_000,
      },
    );
    const shown = await page.locator(".sidebar").boundingBox();
    expect(shown!.x).toBe(0);
    await screenshot(page, "nav-phone-open");

    // Signed in by the explicit sign-in: / is the dashboard; signing out ends the session.
    await page.setViewportSize(LAPTOP);
    await page.goto(`${app.url}/`);
    expect(new URL(page.url()).pathname).toBe("/");
    expect(await page.locator("h1").textContent()).toBe("Dashboard");
    await page.click("text=Sign out");
    await page.waitForURL(/\/login$/);
    expect(await page.locator(".flash.info").textContent()).toBe("You are signed out.");
    const cookies = await page.context().cookies();
    expect(cookies.map((c) => c.name)).not.toContain(SESSION_COOKIE);
    await page.goto(`${app.url}/`);
    expect(new URL(page.url()).pathname).toBe("/login");
    expect(await page.locator("h1").textContent()).toBe("Sign in");
    await page.close();
  });

  test("the login page renders on a phone", async () => {
    const page = await browser.newPage({ viewport: PHONE });
    await page.goto(`${app.url}/login`);
    await screenshot(page, "login-phone");
    expect(await page.locator("h1").textContent()).toBe("Sign in");
    await page.close();
  });
});
