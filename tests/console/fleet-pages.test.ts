// Dashboard and device list in real Chromium: counts, search, chips, sort, keyset paging, bulk approval,
// live updates across two web instances, and what a viewer sees.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startOutpost } from "../../app";
import { THROTTLE_MS } from "../../modules/live/hub";
import { loadConfig } from "../../modules/platform/config";
import { createLogger } from "../../modules/platform/logger";
import { startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { advancing } from "../helpers/clock";
import { markSeen } from "../helpers/seen";
import { agentHeartbeat, approve, approvedDevice, heartbeat, registerDevice, signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();

async function statValue(page: import("playwright-core").Page, key: string) {
  return Number((await page.locator(`[data-live="${key}"]`).textContent())!.replace(/,/g, ""));
}

describe("dashboard", () => {
  test("shows zeros, then the counts after devices register through the device API", async () => {
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/`);
    expect(await page.locator("h1").textContent()).toBe("Dashboard");
    expect(await statValue(page, "total")).toBe(0);
    expect(await page.locator(".empty h2").textContent()).toBe("No devices yet");
    // The command is shown as code, not with literal backticks.
    expect(await page.locator(".empty p code").textContent()).toBe("outpost-agent register");
    expect(await page.locator(".empty p").textContent()).not.toContain("`");

    const pending = [];
    for (let i = 0; i < 3; i++) pending.push(await registerDevice(app, { product_name: "gateway-v2" }));
    const online = await approvedDevice(app, {
      product_name: "sensor-hub",
      metadata: { name: "boiler-room" },
    });
    await heartbeat(app, online, await agentHeartbeat({ cpu: 21, memory: 48, disk: 63 }));
    await approvedDevice(app, { product_name: "sensor-hub" }); // approved, never seen: offline

    await page.goto(`${app.url}/`);
    expect(await statValue(page, "total")).toBe(5);
    expect(await statValue(page, "online")).toBe(1);
    expect(await page.locator('[data-live-hint="offline"]').textContent()).toBe("1 offline");
    expect(await statValue(page, "pending")).toBe(3);
    expect(await statValue(page, "alerts")).toBe(0);
    expect(await page.locator(".recent-list li").count()).toBe(5);
    await page.waitForSelector("#fleet-activity canvas");
    expect(Number(await page.getAttribute("#fleet-activity", "data-points"))).toBeGreaterThan(0);

    // Each number links to the list behind it.
    await page.click('a.stat[href="/devices?approval_status=pending"]');
    await page.waitForURL(/approval_status=pending/);
    expect(await page.locator("tbody tr").count()).toBe(3);

    // Online and offline count approved devices; their links list exactly those, even when a
    // pending device has a recent last_seen_at (it is in neither figure).
    await markSeen(app.database.sql, pending[0]!.id, 0);
    await page.goto(`${app.url}/`);
    const onlineFigure = await statValue(page, "online");
    expect(onlineFigure).toBe(1);
    await page.click(".stat-split a.stat-link");
    await page.waitForURL(/connectivity_status=online/);
    expect(new URL(page.url()).searchParams.get("approval_status")).toBe("approved");
    expect(await page.locator("tbody tr").count()).toBe(onlineFigure);
    expect(await page.locator("tbody tr").textContent()).toContain("boiler-room");
    await page.goto(`${app.url}/`);
    const offlineLink = page.locator('.stat-split a.hint[data-live-hint="offline"]');
    expect(await offlineLink.textContent()).toBe("1 offline");
    await offlineLink.click();
    await page.waitForURL(/connectivity_status=offline/);
    expect(new URL(page.url()).searchParams.get("approval_status")).toBe("approved");
    expect(await page.locator("tbody tr").count()).toBe(1);
    await markSeen(app.database.sql, pending[0]!.id, null);
    await page.goto(`${app.url}/`);
    await screenshot(page, "console-dashboard");
    await page.setViewportSize(PHONE);
    await page.reload();
    await screenshot(page, "console-dashboard-phone");
    await context.close();
  }, 60_000);

  test("a second web instance on the same database updates its count live (LISTEN/NOTIFY → SSE)", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-web2-"));
    const config = loadConfig({
      DATABASE_URL: app.database.url,
      DATA_DIR: dataDir,
      PORT: "0",
      HOST: "127.0.0.1",
      OUTPOST_ROLE: "web",
      LOG_LEVEL: "silent",
      SECRET_KEY: app.config.secretKey,
    });
    const second = await startOutpost(config, createLogger("silent"), { announceSetupCode: () => {} });
    afterAll(async () => {
      await second.stop();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const context = await signedIn(browser, { ...app, url: second.url! }, "viewer");
    const page = await context.newPage();
    await page.goto(`${second.url}/`);
    await page.waitForSelector('[data-live-status][data-state="live"]');
    const before = await statValue(page, "total");
    const pendingBefore = await statValue(page, "pending");
    // Registered through the FIRST instance: the second one hears it from PostgreSQL.
    await registerDevice(app, { product_name: "late-arrival" });
    await page.waitForFunction(
      (n) => document.querySelector('[data-live="total"]')?.textContent === String(n),
      before + 1,
      { timeout: 10_000 },
    );
    expect(await statValue(page, "pending")).toBe(pendingBefore + 1);
    await context.close();
  }, 60_000);
});

describe("device list", () => {
  test("search (debounced), filter chips with Clear all, click-a-cell-to-filter, sort", async () => {
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices`);
    await page.fill("#device-search", "boiler");
    await page.waitForURL(/q=boiler/);
    await page.waitForFunction(() => document.querySelectorAll("#device-results tbody tr").length === 1);
    expect(await page.locator("#device-results tbody tr .device-link").textContent()).toBe("boiler-room");
    expect(await page.locator(".chip").allTextContents()).toEqual([expect.stringContaining("Query: boiler")]);

    // Click a product cell: adds the filter, keeps the rest.
    await page.goto(`${app.url}/devices`);
    await page.locator("a.cell-filter", { hasText: "gateway-v2" }).first().click();
    await page.waitForURL(/product=gateway-v2/);
    expect(await page.locator("#device-results tbody tr").count()).toBe(3);
    await page.locator("a.cell-filter .badge", { hasText: "pending" }).first().click();
    await page.waitForURL(/approval_status=pending/);
    expect(new URL(page.url()).searchParams.get("product")).toBe("gateway-v2");
    const chips = await page.locator(".chip").allTextContents();
    expect(chips.join(" ")).toContain("Approval: pending");
    expect(chips.join(" ")).toContain("Product: gateway-v2");
    await screenshot(page, "console-devices-filtered");

    // Removing one chip keeps the other; Clear all drops both.
    await page.locator(".chip", { hasText: "Approval" }).click();
    await page.waitForURL((url) => !url.searchParams.has("approval_status"));
    expect(new URL(page.url()).searchParams.get("product")).toBe("gateway-v2");
    await page.locator(".chip", { hasText: "Product" }).click();
    await page.waitForURL((url) => !url.searchParams.has("product"));
    await page.goto(`${app.url}/devices?product=gateway-v2&approval_status=pending`);
    await page.click("text=Clear all");
    await page.waitForURL(`${app.url}/devices`);
    expect(await page.locator(".chip").count()).toBe(0);

    // Sort by MAC ascending, then descending.
    await page.click('th a.sort-link:has-text("MAC address")');
    await page.waitForURL(/sort=mac_address/);
    const ascending = await page.locator("tbody tr td.mono:nth-child(3)").allTextContents();
    expect(ascending).toEqual([...ascending].sort());
    await page.click('th a.sort-link:has-text("MAC address")');
    await page.waitForURL(/order=desc/);
    const descending = await page.locator("tbody tr td.mono:nth-child(3)").allTextContents();
    expect(descending).toEqual([...descending].sort().reverse());
    expect(descending[0]! > ascending[0]!).toBe(true);
    expect(await page.getAttribute('th[aria-sort="descending"]', "aria-sort")).toBe("descending");
    await context.close();
  }, 60_000);

  test("keyset pagination walks every device once, forward and back", async () => {
    const registered = [];
    for (let i = 0; i < 57; i++) registered.push(registerDevice(app, { product_name: "pager-fleet" }));
    await Promise.all(registered);
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices?product=pager-fleet&sort=mac_address`);
    const first = await page.locator("tbody tr td.mono:nth-child(2)").allTextContents();
    expect(first.length).toBe(50);
    // The count comes by a request of its own, once the page is in.
    await page.locator(".pager", { hasText: "57 matching" }).waitFor({ timeout: 10_000 });
    await page.click('a[rel="next"]');
    await page.waitForURL(/after=/);
    const second = await page.locator("tbody tr td.mono:nth-child(2)").allTextContents();
    expect(second.length).toBe(7);
    expect(await page.locator('a[rel="next"]').count()).toBe(0);
    expect(new Set([...first, ...second]).size).toBe(57);
    expect([...first, ...second]).toEqual([...first, ...second].sort());
    await page.click('a[rel="prev"]');
    await page.waitForURL(/before=/);
    expect(await page.locator("tbody tr td.mono:nth-child(2)").allTextContents()).toEqual(first);
    expect(await page.locator('a[rel="prev"]').count()).toBe(0);
    await context.close();
  }, 60_000);

  test("bulk approve: 5 selected, 3 pending change, 2 approved stay unchanged; flash says how many", async () => {
    const pending = [];
    for (let i = 0; i < 3; i++) pending.push(await registerDevice(app, { product_name: "bulk-batch" }));
    const approved = [];
    for (let i = 0; i < 2; i++) approved.push(await registerDevice(app, { product_name: "bulk-batch" }));
    await approve(
      app,
      approved.map((d) => d.id),
    );
    const approvedRows = await app.database.sql<{ id: string; approval_changed_at: Date }[]>`
      select id, approval_changed_at from devices where id = any(${approved.map((d) => d.id)}::uuid[]) order by id`;

    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices?product=bulk-batch`);
    // Nothing selected yet: the page script disables the bulk actions. A live refresh re-renders them
    // (enabled, as the server sends them for pages without script) and the script disables them again
    // once it settles: wait for every one to be disabled, not for a moment of it.
    await page.waitForFunction(() => {
      const actions = Array.from(document.querySelectorAll<HTMLButtonElement>("[data-bulk-action]"));
      return actions.length > 0 && actions.every((button) => button.disabled);
    });
    await page.check("[data-select-all]");
    expect(await page.locator("[data-selected-count]").textContent()).toBe("5 selected");
    await screenshot(page, "console-devices-selected");
    let confirmText = "";
    page.once("dialog", (dialog) => {
      confirmText = dialog.message();
      void dialog.accept();
    });
    await page.click('button[value="approve"]');
    await page.waitForSelector(".flash.success");
    expect(confirmText).toContain("Approve 5 selected devices?");
    expect(await page.locator(".flash.success").textContent()).toBe(
      "3 devices approved. 2 not pending, left unchanged.",
    );
    expect(new URL(page.url()).searchParams.get("product")).toBe("bulk-batch");
    const rows = await app.database.sql<{ approval_status: string }[]>`
      select approval_status from devices where id = any(${pending.map((d) => d.id)}::uuid[])`;
    expect(rows.map((r) => r.approval_status)).toEqual(["approved", "approved", "approved"]);
    const after = await app.database.sql<{ id: string; approval_changed_at: Date }[]>`
      select id, approval_changed_at from devices where id = any(${approved.map((d) => d.id)}::uuid[]) order by id`;
    expect(after).toEqual(approvedRows);

    // Cancelling the confirmation changes nothing.
    await page.goto(`${app.url}/devices?product=bulk-batch`);
    await page.locator("[data-select-row]").first().check();
    page.once("dialog", (dialog) => void dialog.dismiss());
    await page.click('button[value="reject"]');
    await page.waitForTimeout(300);
    expect(await page.locator(".flash").count()).toBe(0);
    await context.close();
  }, 60_000);

  test("a new registration appears in an open list without reload", async () => {
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices?product=live-list`);
    await page.waitForSelector('[data-live-status][data-state="live"]');
    expect(await page.locator(".empty h2").textContent()).toBe("No devices match");
    await registerDevice(app, { product_name: "live-list", metadata: { name: "fresh-one" } });
    // The hub's throttle passes on the app's clock, not in real time.
    await advancing(app.clock, THROTTLE_MS, page.waitForSelector("text=fresh-one", { timeout: 10_000 }));
    await context.close();
  }, 60_000);

  test("screenshots at laptop and phone width", async () => {
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices`);
    await screenshot(page, "console-devices");
    await page.setViewportSize(PHONE);
    await page.goto(`${app.url}/devices`);
    await screenshot(page, "console-devices-phone");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.setViewportSize(LAPTOP);
    await page.goto(`${app.url}/devices/new`);
    await page.fill('input[name="mac_address"]', "not-a-mac");
    await page.fill('input[name="product_name"]', "kiosk");
    await page.click('button:has-text("Add device")');
    expect(await page.locator(".field-error").textContent()).toContain("MAC address");
    expect(await page.inputValue('input[name="product_name"]')).toBe("kiosk");
    await screenshot(page, "console-device-new-error");
    await page.fill('input[name="mac_address"]', "06:C0:AA:BB:CC:01");
    await page.check('input[name="approved"]');
    await page.click('button:has-text("Add device")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("added and approved");
    // The pre-approved device's first registration with its claim token gets its API token at once.
    const claim = (await page.locator("#claim-token").textContent())!.trim();
    expect(await page.locator("#claim-install-line").textContent()).toContain(`--token ${claim}`);
    await screenshot(page, "console-device-new-claim-token");
    // Its page says it waits for the claim token, and how; an operator reissues a lost one.
    await page.click('#created a:has-text("Open the device")');
    const banner = page.locator("[data-awaiting-claim]");
    expect(await banner.textContent()).toContain("Waiting for the device to register with its claim token");
    expect(await banner.textContent()).toContain("install.sh | sh -s -- --token <claim token>");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click('button:has-text("Reissue claim token")');
    await page.waitForSelector("#claim-reissued");
    const reissued = (await page.locator("#claim-token").textContent())!.trim();
    expect(reissued).toStartWith("oen_");
    expect(reissued).not.toBe(claim);
    expect(await page.locator("#claim-install-line").textContent()).toContain(`--token ${reissued}`);
    await screenshot(page, "console-device-claim-reissued");
    const refused = await app.fetch("/api/v1/devices/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mac_address: "06-c0-aa-bb-cc-01", enrolment_token: claim }),
    });
    expect(refused.status).toBe(409);
    const first = await registerDevice(app, { mac_address: "06-c0-aa-bb-cc-01", enrolment_token: reissued });
    expect(first.token).toBeString();
    await page.reload();
    expect(await page.locator("[data-awaiting-claim]").count()).toBe(0);
    await page.setViewportSize(PHONE);
    await page.goto(`${app.url}/devices/new`);
    await screenshot(page, "console-device-new-phone");
    await context.close();
  }, 60_000);
});

describe("viewer", () => {
  test("sees pages without a single write control", async () => {
    const device = await approvedDevice(app, { product_name: "viewer-check" });
    await heartbeat(app, device, await agentHeartbeat({ cpu: 5, memory: 10, disk: 20 }));
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    for (const url of [
      "/",
      "/devices",
      `/devices/${device.id}`,
      `/devices/${device.id}?tab=scripts`,
      `/devices/${device.id}?tab=commands`,
      `/devices/${device.id}?tab=telemetry`,
    ]) {
      await page.goto(`${app.url}${url}`);
      const forms = await page.locator('main form[method="post"]').count();
      expect({ url, forms }).toEqual({ url, forms: 0 });
      expect(await page.locator("main [data-select-row], main [data-bulk-action]").count()).toBe(0);
      expect(await page.locator('a[href="/devices/new"]').count()).toBe(0);
    }
    await screenshot(page, "console-viewer-device");
    // The routes refuse too.
    const session = await app.session("viewer");
    const response = await app.fetch("/devices/bulk", {
      method: "POST",
      headers: { cookie: session.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: session.csrf, ids: device.id, action: "reject" }).toString(),
    });
    expect(response.status).toBe(403);
    expect((await page.goto(`${app.url}/settings`))!.status()).toBe(403);
    await context.close();
  }, 60_000);
});
