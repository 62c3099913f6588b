// Device detail in real Chromium: gauges and uPlot charts from heartbeats stored through the device
// API, the list_scripts round trip with a simulated agent poll, install/remove/cancel, offline state.
import { describe, expect, test } from "bun:test";
import { startTestApp } from "../helpers/app";
import { launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { agentHeartbeat, approvedDevice, heartbeat, postResults, registerDevice, signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();

const device = await approvedDevice(app, {
  product_name: "edge-gateway",
  metadata: { name: "pump-station-7", hostname: "pump7", ip_address: "198.51.100.7" },
});

describe("device detail", () => {
  test("gauges and telemetry charts draw from real stored heartbeats", async () => {
    const samples = [
      { cpu: 12.5, memory: 41, disk: 62 },
      { cpu: 37, memory: 44.5, disk: 62.2 },
      { cpu: 81, memory: 47, disk: 62.4 },
    ];
    for (const sample of samples) await heartbeat(app, device, agentHeartbeat(sample));
    // Older heartbeats (stored as the API stored these) spread over the last hours.
    const stored = await app.database.sql<{ id: string }[]>`
      select id from telemetry_events where device_id = ${device.id}::uuid order by recorded_at`;
    await app.database
      .sql`update telemetry_events set recorded_at = recorded_at - interval '3 hours' where id = ${stored[0]!.id}::uuid`;
    await app.database
      .sql`update telemetry_events set recorded_at = recorded_at - interval '30 minutes' where id = ${stored[1]!.id}::uuid`;

    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}`);
    expect(await page.locator("h1").textContent()).toBe("pump-station-7");
    expect(await page.locator(".device-header .badge").allTextContents()).toEqual(["approved", "online"]);
    expect(await page.locator('.gauge svg[aria-label^="CPU"]').getAttribute("aria-label")).toBe("CPU: 81%");
    expect(await page.locator('.gauge svg[aria-label^="Memory"]').getAttribute("aria-label")).toBe(
      "Memory: 47%",
    );
    expect(await page.locator('.gauge svg[aria-label^="Disk"]').getAttribute("aria-label")).toBe(
      "Disk: 62.4%",
    );
    expect(await page.locator(".offline-banner").count()).toBe(0);
    await screenshot(page, "console-device-overview");

    await page.click('nav.tabs a:has-text("Telemetry")');
    await page.waitForURL(/tab=telemetry/);
    await page.waitForSelector(".chart[data-drawn] canvas");
    const charts = await page.locator(".chart-card figcaption").allTextContents();
    expect(charts).toEqual(
      expect.arrayContaining(["cpu.usage_pct", "memory.used_pct", "disk.root_used_pct", "load.load_1m"]),
    );
    // The cpu chart holds the three stored samples (one of them 3 hours back).
    const cpuChart = page.locator(".chart-card", {
      has: page.locator("figcaption", { hasText: /^cpu\.usage_pct$/ }),
    });
    const spec = JSON.parse((await cpuChart.locator(".chart").getAttribute("data-chart"))!);
    const usage = spec.series
      .find((s: { label: string }) => s.label === "usage_pct")
      .values.filter((v: number | null) => v !== null);
    expect(usage).toEqual([12.5, 37, 81]);
    expect(Number(await cpuChart.locator(".chart").getAttribute("data-points"))).toBeGreaterThanOrEqual(3);
    expect(await page.locator("pre.json").textContent()).toContain('"usage_pct": 81');
    expect(await page.locator("#tab-panel .toolbar-row").textContent()).toContain("3 heartbeats in range");
    await screenshot(page, "console-device-telemetry");

    // A 1-hour range leaves the 3-hour-old sample out.
    await page.click('nav.segmented a:has-text("1 hour")');
    await page.waitForURL(/range=1h/);
    expect(await page.locator("#tab-panel .toolbar-row").textContent()).toContain("2 heartbeats in range");
    const hour = JSON.parse((await cpuChart.locator(".chart").getAttribute("data-chart"))!);
    const hourUsage = hour.series.find((s: { label: string }) => s.label === "usage_pct");
    expect(hourUsage.values.filter((v: number | null) => v !== null)).toEqual([37, 81]);
    await page.setViewportSize(PHONE);
    await page.goto(`${app.url}/devices/${device.id}?tab=telemetry`);
    await page.waitForSelector(".chart[data-drawn] canvas");
    await screenshot(page, "console-device-telemetry-phone");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await context.close();
  }, 60_000);

  test("list_scripts: queued in the UI, delivered by a heartbeat, answered, shown without reload", async () => {
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    expect(await page.locator("text=has not listed its scripts yet").count()).toBe(1);
    await page.click('button:has-text("Ask the device for its list")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("answer appears here");
    expect(await page.locator(".flash.info").textContent()).toContain("is queued");
    await page.waitForSelector('[data-live-status][data-state="live"]');

    // The agent polls: the heartbeat reply carries the command, the agent posts its result.
    const reply = await heartbeat(app, device, agentHeartbeat({ cpu: 10, memory: 40, disk: 62 }));
    const command = reply.commands.find((c) => c.type === "list_scripts");
    expect(command).toBeDefined();
    await postResults(app, device, [
      {
        command_id: command!.command_id,
        status: "OK",
        output: {
          scripts: [
            { name: "cpu", version: 1, path: "/var/lib/outpost/scripts/cpu.v1.js", active: true },
            { name: "pcp", version: 3, path: "/var/lib/outpost/scripts/pcp.v3.js", active: true },
            { name: "pcp", version: 2, path: "/var/lib/outpost/scripts/pcp.v2.js", active: false },
          ],
        },
      },
    ]);
    // The page refreshes its panel on the live event for this device.
    await page.waitForSelector("[data-scripts-list] tr", { timeout: 10_000 });
    const names = await page.locator("[data-scripts-list] tr td:first-child").allTextContents();
    expect(names).toEqual(["cpu", "pcp", "pcp"]);
    expect(await page.locator("[data-scripts-list]").textContent()).toContain("older version");
    await screenshot(page, "console-device-scripts");

    await page.click('nav.tabs a:has-text("Commands")');
    await page.waitForURL(/tab=commands/);
    const row = page.locator(`tr[data-command-id="${command!.command_id}"]`);
    expect(await row.locator(".badge").textContent()).toBe("succeeded");
    await context.close();
  }, 60_000);

  test("install a script from text, remove one, cancel a queued command", async () => {
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    // Without front matter the form refuses and keeps the text.
    await page.fill('textarea[name="text"]', "function main() { return { x: 1 }; }");
    await page.click('button:has-text("Queue install")');
    expect(await page.locator("#install-script .field-error").textContent()).toContain("front-matter");
    expect(await page.inputValue('textarea[name="text"]')).toBe("function main() { return { x: 1 }; }");
    const script =
      "/*---\nname: fan-speed\nversion: 1\nschema:\n  type: object\n---*/\nfunction main() { return { rpm: 1200 }; }\n";
    await page.fill('textarea[name="text"]', script);
    await page.click('button:has-text("Queue install")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain('Install of "fan-speed" queued');
    const queued = page.locator("tbody tr", { hasText: "install_script" });
    expect(await queued.locator(".badge").textContent()).toBe("queued");

    page.once("dialog", (dialog) => void dialog.accept());
    await queued.locator('button:has-text("Cancel")').click();
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("Command cancelled");
    expect(await page.locator("tbody tr", { hasText: "install_script" }).count()).toBe(0);

    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    page.once("dialog", (dialog) => void dialog.accept());
    await page
      .locator("[data-scripts-list] tr", { hasText: "cpu" })
      .locator('button:has-text("Remove")')
      .click();
    await page.waitForSelector(".flash.success");
    const reply = await heartbeat(app, device, agentHeartbeat({ cpu: 10, memory: 40, disk: 62 }));
    const remove = reply.commands.find((c) => c.type === "remove_script") as { args: string[] } | undefined;
    expect(remove?.args).toEqual(["cpu"]);
    await page.reload();
    await screenshot(page, "console-device-commands");
    await page.setViewportSize(PHONE);
    await page.reload();
    await screenshot(page, "console-device-commands-phone");
    await context.close();
  }, 60_000);

  test("an offline device says so and when it was last seen; a pending one offers approval", async () => {
    await app.database
      .sql`update devices set last_seen_at = now() - interval '2 hours' where id = ${device.id}::uuid`;
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}`);
    expect(await page.locator(".offline-banner").textContent()).toContain("This device is offline.");
    expect(await page.locator(".offline-banner").textContent()).toContain("2 h ago");
    await screenshot(page, "console-device-offline");

    const pending = await registerDevice(app, { product_name: "edge-gateway" });
    await page.goto(`${app.url}/devices/${pending.id}`);
    expect(await page.locator(".offline-banner").textContent()).toContain("once approved");
    await page.click('button:has-text("Approve")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".device-header .badge").first().textContent()).toBe("approved");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click('button:has-text("Delete")');
    await page.waitForURL(`${app.url}/devices`);
    expect(await page.locator(".flash.success").textContent()).toContain("deleted");
    expect((await page.goto(`${app.url}/devices/${pending.id}`))!.status()).toBe(404);
    await context.close();
  }, 60_000);
});
