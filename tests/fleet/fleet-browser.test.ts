// The fleet in real Chromium: the query box's suggestions and errors, bulk tagging from the device
// list's selection, saving the query as a view (list and dashboard), and a device's tags, labels and name.
import { afterAll, describe, expect, test } from "bun:test";
import { approvedDevice, signedIn } from "../console/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser, screenshot } from "../helpers/browser";

const app = await startTestApp();
const browser = await launchBrowser();
afterAll(() => browser.close());

const operatorToken = await app.token("operator");
async function tag(id: string, key: string, value: string) {
  const response = await app.fetch(`/api/v1/devices/${id}/tags`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${operatorToken}` },
    body: JSON.stringify({ tags: [{ key, value }] }),
  });
  expect(response.status).toBe(200);
}

describe("fleet in the console", () => {
  test("search box: suggestions for tag keys and values, the query's error, then its devices", async () => {
    const berlin = await approvedDevice(app, { metadata: { name: "berlin-gw" }, labels: { rack: "r7" } });
    await approvedDevice(app, { metadata: { name: "munich-gw" } });
    await tag(berlin.id, "site", "berlin");
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices`);
    expect(await page.locator("#query-help summary").textContent()).toBe("Query syntax");

    await page.fill("#device-search", "tag:s");
    await page.waitForSelector('#query-suggestions option[value="tag:site="]', { state: "attached" });
    await page.fill("#device-search", "tag:site=b");
    await page.waitForSelector('#query-suggestions option[value="tag:site=berlin"]', { state: "attached" });
    // Agents' labels are suggested too.
    await page.fill("#device-search", "tag:ra");
    await page.waitForSelector('#query-suggestions option[value="tag:rack="]', { state: "attached" });

    await page.fill("#device-search", "tag:site=berlin foo:x");
    await page.waitForSelector("#query-error");
    expect(await page.locator("#query-error").textContent()).toContain('Unknown key "foo"');
    expect(await page.locator("#device-results tbody tr").count()).toBe(0);

    await page.fill("#device-search", "tag:site=berlin");
    await page.waitForURL(/q=tag%3Asite%3Dberlin/);
    await page.waitForFunction(() => document.querySelectorAll("#device-results tbody tr").length === 1);
    expect(await page.locator("#device-results tbody tr .device-link").textContent()).toBe("berlin-gw");
    expect(await page.locator("#query-error").count()).toBe(0);
    await screenshot(page, "fleet-query");
    // A viewer saves no views.
    expect(await page.locator("#save-view-name").count()).toBe(0);
    await context.close();
  }, 60_000);

  test("bulk tagging the selection, saving the query as a view, the view's dashboard", async () => {
    const a = await approvedDevice(app, { metadata: { name: "lab-a" } });
    const b = await approvedDevice(app, { metadata: { name: "lab-b" } });
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    page.on("dialog", (dialog) => dialog.accept());
    await page.goto(`${app.url}/devices?q=lab-`);
    await page.waitForFunction(() => document.querySelectorAll("#device-results tbody tr").length === 2);
    expect(await page.locator("[data-tag-action]").first().isDisabled()).toBe(true);
    for (const id of [a.id, b.id]) await page.check(`tr[data-device-id="${id}"] [data-select-row]`);
    await page.fill("#bulk-tag", "env=lab");
    await page.click('[data-tag-action][value="add-tag"]');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("set on 2 devices");
    expect(new URL(page.url()).searchParams.get("q")).toBe("lab-");

    await page.goto(`${app.url}/devices?q=${encodeURIComponent("tag:env=lab")}`);
    await page.waitForFunction(() => document.querySelectorAll("#device-results tbody tr").length === 2);
    await page.fill("#save-view-name", "Lab devices");
    await page.click(".save-view button");
    await page.waitForURL(/view=/);
    expect(await page.locator(".chip", { hasText: "View" }).textContent()).toContain("Lab devices");
    expect(await page.locator("#device-results tbody tr").count()).toBe(2);

    // A dynamic group: a device tagged later is a member at once.
    const later = await approvedDevice(app, { metadata: { name: "lab-c" } });
    await tag(later.id, "env", "lab");
    await page.reload();
    expect(await page.locator("#device-results tbody tr").count()).toBe(3);

    await page.goto(`${app.url}/`);
    await page.selectOption("#dashboard-view-select", { label: "Lab devices" });
    await page.click("#dashboard-view button");
    await page.waitForURL(/view=/);
    expect(await page.locator("h1").textContent()).toBe("Dashboard: Lab devices");
    expect(await page.locator('[data-live="total"]').textContent()).toBe("3");
    await screenshot(page, "fleet-view-dashboard");
    await context.close();
  }, 60_000);

  test("a device's tags, its agent's labels (read-only) and its display name", async () => {
    const device = await approvedDevice(app, { metadata: { name: "pump-7" }, labels: { "hw.rev": "b2" } });
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=tags`);
    expect(await page.locator("#agent-labels").textContent()).toContain("hw.rev=b2");
    expect(await page.locator("#agent-labels form, #agent-labels button").count()).toBe(0);
    await page.fill('#add-tag-form [name="tag"]', "site=hamburg");
    await page.click("#add-tag-form button");
    await page.waitForSelector('#operator-tags [data-tag="site"]');
    await page.fill('#profile-form [name="display_name"]', "Pump station 7");
    await page.fill('#profile-form [name="notes"]', "Behind the blue door");
    await page.click("#profile-form button");
    await page.waitForSelector(".flash.success");
    expect(await page.locator("h1").textContent()).toContain("Pump station 7");
    expect(await page.inputValue('#profile-form [name="notes"]')).toBe("Behind the blue door");
    await screenshot(page, "fleet-device-tags");
    await page.locator('#operator-tags [data-tag="site"] button').click();
    await page.waitForSelector("#operator-tags", { state: "detached" });
    await context.close();
  }, 60_000);
});
