// Identity conflicts and revocation in the console (Chromium): the device list flags a conflict, the
// device page explains it and lets an operator accept the new identity; an approved device is revoked.
import { afterAll, describe, expect, test } from "bun:test";
import { approveDevices } from "../../modules/devices/service";
import { secretFingerprint } from "../../shared/secret-fingerprint";
import { json, newMac } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();
afterAll(() => app.stop());

const register = async (body: Record<string, unknown>) => {
  const response = await app.fetch("/api/v1/devices/register", json(body));
  return { status: response.status, data: ((await response.json()) as { data: { id: string } }).data };
};

describe("identity in the console", () => {
  test("a conflict is flagged in the list, explained on the page, and accepted by an operator", async () => {
    const mac = newMac();
    const first = await register({ mac_address: mac, product_name: "gate", device_secret: "a".repeat(43) });
    await approveDevices(app.database.sql, [first.data.id]);
    expect((await register({ mac_address: mac, device_secret: "b".repeat(43) })).status).toBe(409);

    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices`);
    const row = page.locator("tbody tr", { hasText: mac });
    expect(await row.locator(".badge.danger").textContent()).toContain("identity conflict");

    // A competing claim arrives: refused and counted, the claim shown stays the first one.
    expect((await register({ mac_address: mac, device_secret: "x".repeat(43) })).status).toBe(409);
    await page.goto(`${app.url}/devices/${first.data.id}`);
    const banner = page.locator("[data-identity-conflict]");
    expect(await banner.textContent()).toContain("could not prove it is this device");
    expect(await banner.textContent()).toContain("from 127.0.0.1");
    expect(await banner.locator("[data-claim-fingerprint]").textContent()).toBe(
      secretFingerprint("b".repeat(43)),
    );
    expect(await banner.locator("[data-refused-claims]").textContent()).toContain(
      "1 registration of this MAC with another secret (or none) was refused",
    );
    await screenshot(page, "console-device-identity-conflict");
    await page.setViewportSize(PHONE);
    await screenshot(page, "console-device-identity-conflict-phone");

    page.once("dialog", (dialog) => void dialog.accept());
    await banner.locator('button:has-text("Accept new identity")').click();
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("New identity accepted");
    expect(await page.locator("[data-identity-conflict]").count()).toBe(0);
    // The accepted identity registers and gets a token at once (the device is approved).
    const back = await app.fetch(
      "/api/v1/devices/register",
      json({ mac_address: mac, device_secret: "b".repeat(43) }),
    );
    expect(((await back.json()) as { data: { api_token?: string } }).data.api_token).toBeString();
    await context.close();
  }, 60_000);

  test("a decision made on a page whose claim changed meanwhile is refused in place", async () => {
    const mac = newMac();
    const first = await register({ mac_address: mac, device_secret: "f".repeat(43) });
    await approveDevices(app.database.sql, [first.data.id]);
    expect((await register({ mac_address: mac, device_secret: "g".repeat(43) })).status).toBe(409);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    // A page that stays as it was shown (no live updates): the live page would swap the panel to the
    // new claim before the click; this is about a decision posted from a page that was not updated.
    await page.route("**/live/events", (route) => route.abort());
    await page.goto(`${app.url}/devices/${first.data.id}`);
    // Meanwhile: the claim shown is rejected elsewhere and another one arrives.
    const other = await app.session("operator");
    const rejected = await app.fetch(`/devices/${first.data.id}/identity`, {
      method: "POST",
      headers: { cookie: other.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        _csrf: other.csrf,
        decision: "reject",
        fingerprint: secretFingerprint("g".repeat(43)),
      }).toString(),
    });
    expect(rejected.status).toBe(303);
    expect((await register({ mac_address: mac, device_secret: "h".repeat(43) })).status).toBe(409);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.locator('[data-identity-conflict] button:has-text("Accept new identity")').click();
    await page.waitForSelector(".flash.error");
    expect(await page.locator(".flash.error").textContent()).toContain("changed since the page was shown");
    expect(await page.locator("[data-claim-fingerprint]").textContent()).toBe(
      secretFingerprint("h".repeat(43)),
    );
    await screenshot(page, "console-device-identity-claim-changed");
    await context.close();
  }, 60_000);

  test("viewers see the conflict but cannot decide it", async () => {
    const mac = newMac();
    const first = await register({ mac_address: mac, device_secret: "c".repeat(43) });
    await register({ mac_address: mac, device_secret: "d".repeat(43) });
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${first.data.id}`);
    expect(await page.locator("[data-identity-conflict]").count()).toBe(1);
    expect(await page.locator("[data-identity-conflict] button").count()).toBe(0);
    await context.close();
  }, 60_000);

  test("revoke: an approved device becomes rejected and its token stops working", async () => {
    const mac = newMac();
    const first = await register({ mac_address: mac, device_secret: "e".repeat(43) });
    await approveDevices(app.database.sql, [first.data.id]);
    const issued = await app.fetch(
      "/api/v1/devices/register",
      json({ mac_address: mac, device_secret: "e".repeat(43) }),
    );
    const token = ((await issued.json()) as { data: { api_token: string } }).data.api_token;
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${first.data.id}`);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click('button:has-text("Revoke")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("Device revoked");
    expect(await page.locator(".device-header .badge").first().textContent()).toBe("rejected");
    const beat = await app.fetch(`/api/v1/devices/${first.data.id}/heartbeat?api_key=${token}`, json({}));
    expect(beat.status).toBe(403);
    await context.close();
  }, 60_000);
});
