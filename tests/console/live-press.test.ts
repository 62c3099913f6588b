// A live refresh never swaps the part of a page under a pressed pointer (ui/static/app.js): in real
// Chromium, a queued command's own event refreshes the device's Commands tab while its Cancel button is
// held down; the release still cancels, and what the refresh brought is put in after it. The device list
// holds its refresh while rows are ticked or a name is typed in its forms.
import { afterAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
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
    const box = (await cancel.boundingBox())!;
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
    // The queueing's own event may refresh the tab just now, the row between two swaps for an instant.
    let box = await cell.boundingBox();
    for (let i = 0; !box && i < 50; i++) {
      await Bun.sleep(100);
      box = await cell.boundingBox();
    }
    if (!box) throw new Error("the command's row never showed");
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
    // The approval's own event may refresh the list just now, the row between two swaps for an instant.
    let place = await box.boundingBox();
    for (let i = 0; !place && i < 50; i++) {
      await Bun.sleep(100);
      place = await box.boundingBox();
    }
    if (!place) throw new Error("the device's row never showed");
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
