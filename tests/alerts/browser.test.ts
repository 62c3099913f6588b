// Acceptance in Chromium: a rule made in the form (validation, discard confirmation) fires on real
// heartbeats through the real worker, shows live on the dashboard and the device page, is
// acknowledged, then resolves itself; an offline alert opens and clears with a shortened window.
import { afterAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { checkOfflineDevices } from "../../modules/alerts/offline";
import { TICK_MS } from "../../modules/live/hub";
import { signedIn } from "../console/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser, screenshot } from "../helpers/browser";
import { advancing } from "../helpers/clock";
import { markSeen } from "../helpers/seen";
import { beat, sensorDevice } from "./helpers";

const app = await startTestApp(); // all roles: the job worker evaluates
/** Alerts change no device row: the dashboard hears of them at the live hub's re-count (app clock moved on). */
const liveAlerts = (count: string, page: Page) =>
  advancing(
    app.clock,
    TICK_MS,
    page.waitForSelector(`[data-live="alerts"]:text-is("${count}")`, { timeout: 20_000 }),
  );
const browser = await launchBrowser();
afterAll(async () => {
  await browser.close();
  await app.stop();
});
const sql = app.database.sql;

describe("alerts in the browser", () => {
  test("rule form, live alert on dashboard and device page, acknowledge, auto-resolve, offline alert", async () => {
    const device = await sensorDevice(app, "browser-prod");
    await beat(app, device, { temp: 20, state: "ok" });
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();

    // The form: product preselected (the only one), field chosen (htmx re-renders the operators).
    await page.goto(`${app.url}/alerts/new`);
    await page.fill('input[name="name"]', "Browser hot");
    await page.selectOption('select[name="condition_field"]', "sensor.temp");
    await page.waitForSelector('select[name="operator"] option[value=">="]', { state: "attached" });
    await page.selectOption('select[name="operator"]', ">");
    await page.fill('input[name="threshold_value"]', "fifty");
    await page.fill('input[name="resolve_after_minutes"]', "0");
    await page.click('#rule-form button[type="submit"]');
    await page.waitForSelector("text=Threshold value is invalid for the selected field type.");
    expect(await page.locator(".flash.error").first().textContent()).toBe(
      "Unable to save rule. Correct the highlighted fields.",
    );

    // Discard confirmation: unsaved edits ask first; Keep Editing stays.
    await page.fill('input[name="threshold_value"]', "50");
    await page.click("a[data-discard]");
    await page.waitForSelector("#discard-dialog[open]");
    expect(await page.locator("#discard-dialog h2").textContent()).toBe("Discard Changes?");
    await screenshot(page, "alerts-rule-discard");
    await page.click("[data-keep-editing]");
    expect(await page.locator("#discard-dialog[open]").count()).toBe(0);
    await page.keyboard.press("Control+Enter");
    await page.waitForURL(/\/alerts\?tab=rules$/);
    expect(await page.locator(".flash.success").textContent()).toBe("Rule created successfully");
    await screenshot(page, "alerts-rules-tab");

    // Editing: the name is fixed and Save Changes waits for a change (reference).
    const [{ id: ruleId }] = await sql`select id from alert_rules where name = 'Browser hot'`;
    await page.goto(`${app.url}/alerts/${ruleId}/edit`);
    expect(await page.locator('input[name="name"]').isDisabled()).toBe(true);
    const save = page.locator('#rule-form button[type="submit"]');
    expect(await save.isDisabled()).toBe(true);
    await page.fill('input[name="threshold_value"]', "51");
    expect(await save.isDisabled()).toBe(false);
    await page.fill('input[name="threshold_value"]', "50");
    expect(await save.isDisabled()).toBe(true);

    // Breach: real heartbeat → worker → alert; the dashboard counts it live.
    const dashboard = await context.newPage();
    await dashboard.goto(`${app.url}/`);
    await dashboard.waitForSelector('[data-live-status][data-state="live"]');
    expect(await dashboard.locator('[data-live="alerts"]').textContent()).toBe("0");
    await beat(app, device, { temp: 75, state: "ok" });
    await liveAlerts("1", dashboard);
    await screenshot(dashboard, "alerts-dashboard-live");

    await page.goto(`${app.url}/devices/${device.id}`);
    await page.waitForSelector('#device-alerts:has-text("Rule Breach: sensor.temp > 50")');
    await screenshot(page, "alerts-device-panel");

    // Acknowledge from the list with a note.
    await page.goto(`${app.url}/alerts`);
    await page.check('input[name="ids"]');
    await page.fill('#bulk-form input[name="note"]', "fan replaced");
    await page.click('button[value="acknowledge"]');
    await page.waitForSelector("text=1 alert(s) acknowledged.");
    expect(await page.locator("#alert-table .badge", { hasText: "acknowledged" }).count()).toBe(1);
    await screenshot(page, "alerts-active-acknowledged");

    // Recovery resolves it automatically (auto-resolve after 0 minutes).
    await beat(app, device, { temp: 30, state: "ok" });
    await liveAlerts("0", dashboard);
    await page.goto(`${app.url}/alerts?tab=history`);
    expect(await page.locator("#alert-table tbody tr").count()).toBe(1);
    await page.click("#alert-table tbody tr a:has-text('Rule Breach')");
    expect(await page.locator("dd", { hasText: "automatically" }).count()).toBe(1);
    expect(await page.locator("dd", { hasText: "fan replaced" }).count()).toBe(1);

    // Offline with a shortened window (1 minute): silence → alert → the next heartbeat clears it.
    await app.services.settings.saveMonitoring({
      online_window_minutes: "5",
      offline_alert_minutes: "1",
      telemetry_retention_days: "30",
    });
    await markSeen(sql, device.id, 120);
    await checkOfflineDevices(sql, app.config); // the alerts_offline task (cron waits for the minute)
    await liveAlerts("1", dashboard);
    await page.goto(`${app.url}/alerts`);
    await page.waitForSelector("text=Device hasn't reported in 1 minutes");
    await screenshot(page, "alerts-offline");
    await beat(app, device, { temp: 30, state: "ok" });
    await liveAlerts("0", dashboard);
    await page.goto(`${app.url}/alerts?tab=history&type=offline`);
    await page.waitForSelector("text=Device heartbeat resumed");
    await context.close();
  }, 120_000);
});
