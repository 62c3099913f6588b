// A change made after a page rendered but before its live stream was up sends an event the page never
// hears: once the stream opens, the page refreshes what such an event would have (ui/static/console.js),
// still yielding to what someone is doing. In real Chromium, the page's /live/events request is held
// (page.route) while the change is made, then let through; a reconnect after an error likewise.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { queueCommand } from "../../modules/commands/service";
import { THROTTLE_MS } from "../../modules/live/hub";
import { startTestApp } from "../helpers/app";
import { launchBrowser } from "../helpers/browser";
import { approvedDevice, registerDevice, signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();
afterAll(async () => {
  await browser.close();
  await app.stop();
});

/** A page whose live stream waits until `release()`; `requested` resolves once the page asked for it. */
async function pageWithHeldStream(role: "operator" | "viewer" = "operator") {
  const context = await signedIn(browser, app, role);
  const page = await context.newPage();
  const asked = Promise.withResolvers<void>();
  const gate = Promise.withResolvers<void>();
  await page.route("**/live/events", async (route) => {
    asked.resolve();
    await gate.promise;
    await route.continue();
  });
  return { context, page, requested: asked.promise, release: gate.resolve };
}

// The hub listens for changes once a first browser has connected (as on a console in use): a stream opened
// and read until its first fleet count, so every change below is heard, and its event sent unheard.
beforeAll(async () => {
  const session = await app.session("viewer");
  const stream = new AbortController();
  const response = await app.fetch("/live/events", {
    headers: { cookie: session.cookie },
    signal: stream.signal,
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (let i = 0; i < 50 && !text.includes("event: fleet"); i++) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  expect(text).toContain("event: fleet");
  stream.abort();
});

/**
 * Makes a change and waits until the live hub sent its event, unheard by the page whose stream is held:
 * the hub heard the notification (armed its throttle) and the throttle passed (the app's clock moved on).
 */
async function changeSent<T>(change: () => Promise<T>): Promise<T> {
  const armed = () => app.clock.armed(THROTTLE_MS);
  await app.clock.advance(THROTTLE_MS); // what earlier changes armed is sent first
  const before = armed();
  const result = await change();
  for (let i = 0; i < 250 && armed() <= before; i++) await Bun.sleep(20);
  expect(armed()).toBeGreaterThan(before);
  await app.clock.advance(THROTTLE_MS);
  return result;
}

const live = (page: Page) =>
  page.waitForSelector('[data-live-status][data-state="live"]', { timeout: 10_000 });

describe("a change made before the live stream opened", () => {
  test("the device page's open tab shows it once the stream opens", async () => {
    const device = await approvedDevice(app);
    const { context, page, requested, release } = await pageWithHeldStream();
    await page.goto(`${app.url}/devices/${device.id}?tab=commands`);
    await requested;
    const command = await changeSent(() =>
      queueCommand(app.database.sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: 3600 }),
    );
    expect(await page.locator(`tr[data-command-id="${command.id}"]`).count()).toBe(0);
    release();
    await live(page);
    await page.locator(`tr[data-command-id="${command.id}"]`).waitFor({ timeout: 10_000 });
    expect(await page.locator("#tab-panel").count()).toBe(1); // swapped in place, not nested
    await context.close();
  }, 60_000);

  test("after a reconnect, the device page shows a change made while the stream was down", async () => {
    const device = await approvedDevice(app);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    const asked = Promise.withResolvers<void>();
    const gate = Promise.withResolvers<void>();
    let requests = 0;
    await page.route("**/live/events", async (route) => {
      // The first stream opens and ends at once (as when an instance restarts); the reconnect is held.
      if (++requests === 1)
        return route.fulfill({ status: 200, contentType: "text/event-stream", body: "retry: 200\n: hi\n\n" });
      asked.resolve();
      await gate.promise;
      await route.continue();
    });
    await page.goto(`${app.url}/devices/${device.id}?tab=commands`);
    await asked.promise; // the page saw its stream fail and is reconnecting
    const command = await changeSent(() =>
      queueCommand(app.database.sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: 3600 }),
    );
    expect(await page.locator(`tr[data-command-id="${command.id}"]`).count()).toBe(0);
    gate.resolve();
    await live(page);
    await page.locator(`tr[data-command-id="${command.id}"]`).waitFor({ timeout: 10_000 });
    await context.close();
  }, 60_000);

  test("the device page's catch-up keeps a script being typed in the install form", async () => {
    const device = await approvedDevice(app);
    const { context, page, requested, release } = await pageWithHeldStream();
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    await requested;
    const typed = "/*--- name: half-done version: 1 ---*/\nexport default () => ";
    await page.fill('#install-script-form textarea[name="text"]', typed);
    await page.evaluate(() =>
      document.querySelector<HTMLElement>("#tab-panel")!.setAttribute("data-old", ""),
    );
    const refreshed = page.waitForResponse(
      (response) =>
        response.request().method() === "GET" && response.url().endsWith(`/devices/${device.id}?tab=scripts`),
    );
    release();
    await live(page);
    await refreshed;
    await page.locator("#tab-panel:not([data-old])").waitFor({ timeout: 10_000 }); // the tab was refreshed
    expect(await page.inputValue('#install-script-form textarea[name="text"]')).toBe(typed);
    await context.close();
  }, 60_000);

  test("the dashboard's counts are fresh once the stream opens", async () => {
    const { context, page, requested, release } = await pageWithHeldStream("viewer");
    await page.goto(`${app.url}/`);
    await requested;
    const pending = page.locator('[data-live="pending"]');
    const before = Number((await pending.textContent())!.replace(/,/g, ""));
    await changeSent(() => registerDevice(app));
    release();
    await live(page);
    await page
      .locator('[data-live="pending"]', { hasText: new RegExp(`^${(before + 1).toLocaleString("en-US")}$`) })
      .waitFor({ timeout: 10_000 });
    await context.close();
  }, 60_000);

  test("the device list brings a new device, but not over a name being typed", async () => {
    const first = await pageWithHeldStream();
    await first.page.goto(`${app.url}/devices`);
    await first.requested;
    const device = await changeSent(() => registerDevice(app));
    first.release();
    await live(first.page);
    await first.page.locator(`#device-results a[href="/devices/${device.id}"]`).waitFor({ timeout: 10_000 });
    await first.context.close();

    const typing = await pageWithHeldStream();
    const { page } = typing;
    await page.goto(`${app.url}/devices?q=${encodeURIComponent("-tag:env=nowhere")}`);
    await typing.requested;
    await page.fill("#save-view-name", "Half a na");
    const before = await page.locator("#device-results tbody tr").count();
    await changeSent(() => registerDevice(app));
    typing.release();
    await live(page);
    // The catch-up yields: a refresh is offered instead, and the typed name stays.
    await page.locator("[data-live-notice]:not([hidden])").waitFor({ timeout: 10_000 });
    expect(await page.inputValue("#save-view-name")).toBe("Half a na");
    expect(await page.locator("#device-results tbody tr").count()).toBe(before);
    await typing.context.close();
  }, 60_000);
});
