// Rollouts in real Chromium: "Roll out…" from the device list's selection, the new-rollout form, the
// live progress page following the devices' answers (live channel refresh), pause and resume, at laptop
// and phone width. The app runs its worker: the driver is the real graphile-worker job.
import { afterAll, describe, expect, test } from "bun:test";
import { approvedDevice, heartbeat, postResults, signedIn } from "../console/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { script } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();
afterAll(async () => {
  await browser.close();
  await app.stop();
});

/** Each device polls once and answers what it got: OK, or FAILED for `failing`. */
async function devicesAnswer(devices: { id: string; token: string }[], failing?: string) {
  for (const device of devices) {
    const { commands } = await heartbeat(app, device, { telemetry: { device: {}, scripts: {}, meta: {} } });
    if (commands.length > 0)
      await postResults(
        app,
        device,
        commands.map((c) =>
          device.id === failing
            ? { command_id: c.command_id, status: "FAILED", error: "exit 3" }
            : { command_id: c.command_id, status: "OK", output: { ok: true } },
        ),
      );
  }
}

describe("rollouts in the console", () => {
  test("select devices, roll a script out and watch it live; a tag rollout from a query; phone width", async () => {
    const name = `browser-${crypto.randomUUID().slice(0, 6)}`;
    const devices = await Promise.all(
      [1, 2, 3].map((i) => approvedDevice(app, { metadata: { name: `${name}-${i}` } })),
    );
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices?q=${encodeURIComponent(name)}`);
    for (const device of devices) await page.check(`tr[data-device-id="${device.id}"] [data-select-row]`);
    await Promise.all([page.waitForURL(/\/rollouts\/new\?/), page.click("[data-rollout-selection]")]);
    expect(await page.locator(".page-head p").textContent()).toBe("3 selected devices");
    await page.selectOption('select[name="action"]', "install_script");
    await page.fill('textarea[name="script"]', script("browser"));
    await page.fill('input[name="canary"]', "1");
    await page.fill('input[name="failure_threshold"]', "50");
    await Promise.all([
      page.waitForURL(/\/rollouts\/[0-9a-f-]{36}$/),
      page.click("#rollout-form button[type=submit]"),
    ]);
    expect(await page.locator(".flash.success").textContent()).toContain("Rollout started on 3 devices");

    // The driver (the worker's job) sends the canary; its device answers; the page follows.
    const count = (state: string) => page.locator(`[data-count="${state}"]`).textContent();
    for (let i = 0; i < 40 && (await count("succeeded")) !== "3"; i++) {
      await devicesAnswer(devices);
      await page.waitForTimeout(500); // the worker and the page's refresh run in real time
    }
    expect(await count("succeeded")).toBe("3");
    expect(await page.locator("#rollout-live").getAttribute("data-status")).toBe("completed");
    expect(await page.locator("#rollout-targets tbody tr").count()).toBe(3);
    await screenshot(page, "rollout-progress");

    // A second rollout paused by the operator, then resumed.
    await page.goto(`${app.url}/rollouts/new?q=${encodeURIComponent(name)}`);
    await page.selectOption('select[name="action"]', "add_tag");
    // Only the chosen action's fields show.
    expect(await page.isVisible('textarea[name="script"]')).toBe(false);
    expect(await page.isVisible('input[name="script_name"]')).toBe(false);
    await page.fill('input[name="tag"]', "ring=2");
    await Promise.all([
      page.waitForURL(/\/rollouts\/[0-9a-f-]{36}$/),
      page.click("#rollout-form button[type=submit]"),
    ]);
    await page.waitForFunction(
      () => document.querySelector("#rollout-live")?.getAttribute("data-status") === "completed",
      undefined,
      { timeout: 20_000 },
    );
    expect(await count("succeeded")).toBe("3");

    await page.goto(`${app.url}/rollouts`);
    expect(await page.locator("#rollouts-table tbody tr").count()).toBe(2);
    await context.close();

    const phone = await signedIn(browser, app, "operator", PHONE);
    const small = await phone.newPage();
    await small.goto(`${app.url}/rollouts`);
    await small.click("#rollouts-table tbody tr:first-child a");
    await small.waitForSelector("#rollout-live");
    const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(1);
    await screenshot(small, "rollout-progress-phone");
    await phone.close();
  }, 120_000);

  test("a wave's failures pause it; the page says so and Resume finishes it", async () => {
    const name = `pause-${crypto.randomUUID().slice(0, 6)}`;
    const devices = await Promise.all(
      [1, 2].map((i) => approvedDevice(app, { metadata: { name: `${name}-${i}` } })),
    );
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/rollouts/new?q=${encodeURIComponent(name)}`);
    await page.fill('textarea[name="script"]', script("pausing"));
    await page.fill('input[name="canary"]', "1");
    await page.fill('input[name="failure_threshold"]', "0");
    await Promise.all([
      page.waitForURL(/\/rollouts\/[0-9a-f-]{36}$/),
      page.click("#rollout-form button[type=submit]"),
    ]);
    const status = () => page.locator("#rollout-live").getAttribute("data-status");
    for (let i = 0; i < 40 && (await status()) !== "paused"; i++) {
      await devicesAnswer(devices, devices[0]!.id);
      await devicesAnswer(devices, devices[1]!.id);
      await page.waitForTimeout(500);
    }
    expect(await status()).toBe("paused");
    expect(await page.locator("#rollout-live .flash.error").textContent()).toContain("More than 0%");
    await screenshot(page, "rollout-paused");
    await Promise.all([
      page.waitForURL(/\/rollouts\/[0-9a-f-]{36}$/),
      page.click('#rollout-controls button:has-text("Resume")'),
    ]);
    for (let i = 0; i < 40 && (await status()) !== "completed"; i++) {
      await devicesAnswer(devices);
      await page.waitForTimeout(500);
    }
    expect(await status()).toBe("completed");
    expect(await page.locator('[data-count="failed"]').textContent()).toBe("1");
    await context.close();
  }, 120_000);
});
