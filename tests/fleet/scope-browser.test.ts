// Scopes in Chromium: the rule form and the report builder take a saved view (the scope select shows
// only the input its choice needs, the query box with its syntax help); a bad query comes back with its
// place; the Rules tab and the report page say whose devices; deleting the view in use is refused.
import { afterAll, describe, expect, test } from "bun:test";
import { evaluateAlerts } from "../../modules/alerts/evaluation";
import { addTags } from "../../modules/fleet/service";
import { beat, openAlerts, sensorDevice } from "../alerts/helpers";
import { signedIn } from "../console/helpers";
import { json } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser, screenshot } from "../helpers/browser";

// Web role: evaluation runs when the test calls it.
const app = await startTestApp({ OUTPOST_ROLE: "web" });
const browser = await launchBrowser();
afterAll(async () => {
  await browser.close();
  await app.stop();
});
const sql = app.database.sql;
const operator = { authorization: `Bearer ${await app.token("operator")}` };

describe("scopes in the browser", () => {
  test("a rule and a report scoped to a view, made in the forms; the view in use cannot be deleted", async () => {
    const inside = await sensorDevice(app, "scope-ui");
    const outside = await sensorDevice(app, "scope-ui");
    await addTags(sql, [inside.id], [{ key: "hall", value: "a" }]);
    const created = await app.fetch("/api/v1/views", {
      ...json({ name: "Hall A", query: "tag:hall=a" }),
      headers: { ...operator, "content-type": "application/json" },
    });
    expect(created.status).toBe(201);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();

    await page.goto(`${app.url}/alerts/new`);
    await page.fill('input[name="name"]', "Hall A hot");
    await page.selectOption('select[name="condition_field"]', "sensor.temp");
    await page.waitForSelector('select[name="operator"] option[value=">="]', { state: "attached" });
    await page.selectOption('select[name="operator"]', ">");
    await page.fill('input[name="threshold_value"]', "50");
    // Only the chosen scope's input shows.
    expect(await page.isVisible('select[name="scope_view"]')).toBe(false);
    await page.selectOption('select[name="scope_type"]', "query");
    expect(await page.isVisible('input[name="scope_query"]')).toBe(true);
    expect(await page.isVisible('input[name="device_ids"]')).toBe(false);
    await page.click("#scope-query-help summary");
    await page.waitForSelector("#scope-query-help dl.query-syntax >> text=tag:site=berlin");
    await page.fill('input[name="scope_query"]', "tag:hall=a stauts:online");
    await page.click('#rule-form button[type="submit"]');
    await page.waitForSelector('text=Unknown key "stauts"');
    // As the device list: the message with its place, and the query with a caret under the bad token.
    expect(await page.locator("#query-error span").first().textContent()).toContain("(at character 12)");
    expect(await page.locator("#query-error pre.query-at").textContent()).toBe(
      `tag:hall=a stauts:online\n${" ".repeat(11)}^`,
    );
    await screenshot(page, "scope-rule-form-query-error");

    await page.selectOption('select[name="scope_type"]', "view");
    expect(await page.isVisible('input[name="scope_query"]')).toBe(false);
    await page.selectOption('select[name="scope_view"]', { label: "Hall A" });
    await screenshot(page, "scope-rule-form-view");
    await page.click('#rule-form button[type="submit"]');
    await page.waitForURL(/\/alerts\?tab=rules$/);
    const row = page.locator("#rule-table tr", { hasText: "Hall A hot" });
    expect(await row.textContent()).toContain('View "Hall A"');

    // The rule fires for the view's device only.
    await beat(app, inside, { temp: 70 });
    await beat(app, outside, { temp: 70 });
    await evaluateAlerts(sql, app.config, { settleMs: -5000 });
    expect((await openAlerts(sql, inside.id)).length).toBe(1);
    expect(await openAlerts(sql, outside.id)).toEqual([]);

    // The report builder: every product's fields, the view's devices.
    await page.goto(`${app.url}/reports/new`);
    await page.fill("input[name=name]", "Hall A temperatures");
    await page.selectOption("select[name=field_path_0]", "sensor.temp");
    await page.selectOption('select[name="scope_type"]', "view");
    await page.selectOption('select[name="scope_view"]', { label: "Hall A" });
    await screenshot(page, "scope-report-builder-view");
    await page.click("button:has-text('Save')");
    await page.waitForSelector('text=devices: View "Hall A"');
    await page.click("a[data-mode=per_device]");
    await page.waitForSelector(`tbody a[href="/devices/${inside.id}"]`);
    expect(await page.locator(`tbody a[href="/devices/${outside.id}"]`).count()).toBe(0);
    await screenshot(page, "scope-report-view");

    // The view in use: its delete is refused, naming the rule and the report.
    await page.goto(`${app.url}/views`);
    page.once("dialog", (dialog) => dialog.accept());
    await page.locator("form[action$='/delete'] button").first().click();
    await page.waitForSelector(".flash.error");
    expect(await page.locator(".flash.error").textContent()).toContain(
      'The view "Hall A" is the scope of alert rule "Hall A hot", report "Hall A temperatures"',
    );
  });
});
