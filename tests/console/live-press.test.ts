// A live refresh never swaps the part of a page under a pressed pointer (ui/static/app.js): in real
// Chromium, a queued command's own event refreshes the device's Commands tab while its Cancel button is
// held down; the release still cancels, and what the refresh brought is put in after it. The device list
// holds its refresh while rows are ticked or a name is typed in its forms.
import { afterAll, describe, expect, test } from "bun:test";
import type { Locator, Page } from "playwright-core";
import { queueCommand } from "../../modules/commands/service";
import { startTestApp } from "../helpers/app";
import { launchBrowser } from "../helpers/browser";
import { approvedDevice, registerDevice, signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();
afterAll(async () => {
  await browser.close();
  await app.stop();
});

const queue = (deviceId: string) =>
  queueCommand(app.database.sql, { deviceId, type: "list_scripts", ttlSeconds: 3600 });

/** Queues a command (its event refreshes the tab) and waits until the browser has the refreshed panel. */
async function refreshWhilePressed(page: Page, deviceId: string) {
  const refreshed = page.waitForResponse(
    (response) =>
      response.request().method() === "GET" && response.url().endsWith(`/devices/${deviceId}?tab=commands`),
  );
  const command = await queue(deviceId);
  await refreshed;
  await page.waitForTimeout(300); // what htmx would take to swap it in
  return command;
}

/** Where `locator` is on screen. A live refresh (the queueing's own event, the stream's catch-up) may be
 * swapping it just now, between two swaps for an instant: wait (bounded) until it has a place. */
async function placeOf(locator: Locator, what: string) {
  for (let i = 0; i < 50; i++) {
    const box = await locator.boundingBox();
    if (box) return box;
    await Bun.sleep(100);
  }
  throw new Error(`${what} never showed`);
}

async function openCommandsTab(deviceId: string) {
  const context = await signedIn(browser, app, "operator");
  const page = await context.newPage();
  await page.goto(`${app.url}/devices/${deviceId}?tab=commands`);
  await page.waitForSelector('[data-live-status][data-state="live"]');
  return { context, page };
}

describe("a live refresh under a pressed pointer", () => {
  test("waits for the release: the press on Cancel still cancels", async () => {
    const device = await approvedDevice(app);
    const first = await queue(device.id);
    const { context, page } = await openCommandsTab(device.id);
    const cancel = page.locator(`tr[data-command-id="${first.id}"] button:has-text("Cancel")`);
    const box = await placeOf(cancel, "the Cancel button");
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    const second = await refreshWhilePressed(page, device.id);
    // Not swapped yet: the pressed button is the one the page had, and the new command is not shown.
    expect(await cancel.evaluate((button) => button.isConnected)).toBe(true);
    expect(await page.locator(`tr[data-command-id="${second.id}"]`).count()).toBe(0);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.mouse.up();
    await page.locator(".flash.success", { hasText: "Command cancelled" }).waitFor({ timeout: 10_000 });
    const left = await app.database.sql`select 1 from pending_commands where id = ${first.id}`;
    expect(left.count).toBe(0); // a queued command cancelled is deleted
    await context.close();
  }, 60_000);

  test("a release that clicks nothing puts the refresh in", async () => {
    const device = await approvedDevice(app);
    const first = await queue(device.id);
    const { context, page } = await openCommandsTab(device.id);
    const cell = page.locator(`tr[data-command-id="${first.id}"] td`).first();
    const box = await placeOf(cell, "the command's row");
    await page.mouse.move(box.x + 2, box.y + box.height / 2);
    await page.mouse.down();
    const second = await refreshWhilePressed(page, device.id);
    const secondRow = page.locator(`tr[data-command-id="${second.id}"]`);
    expect(await secondRow.count()).toBe(0);
    await page.mouse.up();
    await secondRow.waitFor({ timeout: 5_000 });
    expect(await page.locator("#tab-panel").count()).toBe(1); // swapped in place, not nested
    await context.close();
  }, 60_000);

  test("the device list's refresh held back by a press that ticks a row is not put over the selection", async () => {
    const device = await approvedDevice(app);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices`);
    await page.waitForSelector('[data-live-status][data-state="live"]');
    const box = page.locator(`tr:has(a[href="/devices/${device.id}"]) [data-select-row]`);
    const place = await placeOf(box, "the device's row");
    await page.mouse.move(place.x + place.width / 2, place.y + place.height / 2);
    await page.mouse.down();
    const refreshed = page.waitForResponse(
      (response) => response.request().method() === "GET" && new URL(response.url()).pathname === "/devices",
    );
    await registerDevice(app); // a fleet event: the list refreshes
    await refreshed;
    await page.waitForTimeout(300);
    await page.mouse.up();
    await page.locator("[data-live-notice]:not([hidden])").waitFor({ timeout: 5_000 });
    expect(await box.isChecked()).toBe(true); // the list was not swapped under the selection
    expect(await page.locator("[data-select-row]:checked").count()).toBe(1);
    await context.close();
  }, 60_000);

  test("a live refresh waits while a view's name is being typed; the Refresh button then brings the list", async () => {
    await approvedDevice(app);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices?q=${encodeURIComponent("-tag:env=nowhere")}`);
    await page.waitForSelector('[data-live-status][data-state="live"]');
    await page.fill("#save-view-name", "Half a na");
    await page.locator("body").click({ position: { x: 1, y: 1 } }); // typed, then looked away
    const before = await page.locator("#device-results tbody tr").count();
    await registerDevice(app); // a fleet event: the list would refresh
    await page.locator("[data-live-notice]:not([hidden])").waitFor({ timeout: 5_000 });
    expect(await page.inputValue("#save-view-name")).toBe("Half a na");
    await page.click("[data-live-refresh]");
    await page.waitForFunction(
      (n) => document.querySelectorAll("#device-results tbody tr").length === n + 1,
      before,
    );
    expect(await page.inputValue("#save-view-name")).toBe("");
    await context.close();
  }, 60_000);
});

describe("a live refresh while a form's answer is on its way", () => {
  test("the refusal shown in place is not dropped: the refresh goes in after the answer", async () => {
    const device = await approvedDevice(app);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    await page.waitForSelector('[data-live-status][data-state="live"]');
    // The install's post is held at the browser until the tab's live refresh has come back.
    const posted = Promise.withResolvers<void>();
    const gate = Promise.withResolvers<void>();
    await page.route(`**/devices/${device.id}/scripts`, async (route) => {
      if (route.request().method() !== "POST") return route.continue();
      posted.resolve();
      await gate.promise;
      await route.continue();
    });
    await page.fill('textarea[name="text"]', "function main() {}");
    await page.click('button:has-text("Queue install")');
    await posted.promise;
    const refreshed = page.waitForResponse(
      (response) =>
        response.request().method() === "GET" && response.url().endsWith(`/devices/${device.id}?tab=scripts`),
    );
    await queue(device.id); // a list_scripts request: the device's event refreshes the tab
    await refreshed;
    await page.waitForTimeout(300); // what htmx would take to swap it in
    gate.resolve();
    await page.locator("#install-script .field-error").waitFor({ timeout: 10_000 });
    expect(await page.inputValue('textarea[name="text"]')).toBe("function main() {}");
    // What the refresh brought is in too: the queued list request is on the tab.
    await page.locator("p.flash.info", { hasText: "list_scripts" }).waitFor({ timeout: 10_000 });
    expect(await page.locator("#tab-panel").count()).toBe(1);
    await context.close();
  }, 60_000);
});

describe("two refreshes of one part on their way at once", () => {
  test("the later answer goes into the part now in the page; the install form kept aside is not lost", async () => {
    const device = await approvedDevice(app);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    await page.waitForSelector('[data-live-status][data-state="live"]');
    await page.fill('textarea[name="text"]', "typed, not yet sent");
    // The next refresh of the tab is held at the browser until a second one was asked for meanwhile (which
    // htmx alone would queue with the panel the first is about to replace as its target).
    const tabUrl = `**/devices/${device.id}?tab=scripts`;
    const held = Promise.withResolvers<void>();
    const gate = Promise.withResolvers<void>();
    let asked = 0;
    const answered = Promise.withResolvers<void>();
    let answers = 0;
    page.on("response", (response) => {
      if (response.url().endsWith(`?tab=scripts`) && ++answers === 2) answered.resolve();
    });
    await page.route(tabUrl, async (route) => {
      if (route.request().headers()["hx-request"] && ++asked === 1) {
        held.resolve();
        await gate.promise;
      }
      await route.continue();
    });
    await queue(device.id); // a device event: refresh 1, held
    await held.promise;
    await Bun.sleep(1500); // past the event's throttle (THROTTLE_MS)
    await queue(device.id); // refresh 2, queued behind it
    await Bun.sleep(1000); // its event has reached the page
    gate.resolve();
    await answered.promise;
    await page.waitForTimeout(300); // what htmx would take to swap it in
    expect(await page.locator("#tab-panel").count()).toBe(1);
    expect(await page.inputValue('textarea[name="text"]', { timeout: 2_000 })).toBe("typed, not yet sent");
    // One more refresh keeps it too: nothing was left set aside, to be lost then.
    const third = page.waitForResponse((r) => r.url().endsWith(`/devices/${device.id}?tab=scripts`));
    await Bun.sleep(1500);
    await queue(device.id);
    await third;
    await page.waitForTimeout(300);
    expect(await page.inputValue('textarea[name="text"]', { timeout: 2_000 })).toBe("typed, not yet sent");
    await context.close();
  }, 60_000);
});
