// Device detail's telemetry in real Chromium: gauges and uPlot charts drawn from heartbeats stored
// through the device API, the chart field picker, the telemetry tab's range and order.
import { describe, expect, test } from "bun:test";
import { startTestApp } from "../helpers/app";
import { launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { agentHeartbeat, approvedDevice, heartbeat, signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();

const device = await approvedDevice(app, {
  product_name: "edge-gateway",
  metadata: {
    name: "pump-station-7",
    hostname: "pump7",
    ip_address: "198.51.100.7",
    os: { platform: "linux", release: "6.1.0-27-arm64", arch: "arm64" },
  },
});

describe("device detail: telemetry", () => {
  test("gauges and telemetry charts draw from real stored heartbeats", async () => {
    const samples = [
      { cpu: 12.5, memory: 41, disk: 62 },
      { cpu: 37, memory: 44.5, disk: 62.2 },
      { cpu: 81, memory: 47, disk: 62.4 },
    ];
    for (const sample of samples) await heartbeat(app, device, await agentHeartbeat(sample));
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
    // Metadata as labelled values: the agent's nested `os` object is not shown as JSON.
    const facts = await page.locator(".card", { hasText: "Metadata" }).locator("dl.facts").first();
    expect(await facts.locator("dt").allTextContents()).toEqual(
      expect.arrayContaining(["Hostname", "IP address", "OS › Platform", "OS › Release", "OS › Arch"]),
    );
    expect(await facts.textContent()).toContain("6.1.0-27-arm64");
    expect(await facts.textContent()).not.toContain("{");
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

  test("telemetry field picker: the first 12 by default, any others on request, kept across ranges", async () => {
    const wide = await approvedDevice(app, {
      product_name: "many-sensors",
      metadata: { name: "sensor-wall" },
    });
    const output: Record<string, number> = {};
    for (let i = 1; i <= 16; i++) output[`s${String(i).padStart(2, "0")}`] = i * 10;
    await heartbeat(app, wide, {
      telemetry: {
        scripts: {
          sensors: { data: { status: "success", validation_status: "valid", duration_ms: 2, output } },
        },
        meta: { collected_at: new Date().toISOString(), script_count: 1 },
      },
      connection_status: { active: false },
    });
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${wide.id}?tab=telemetry`);
    await page.waitForSelector(".chart[data-drawn] canvas");
    const first12 = Array.from({ length: 12 }, (_, i) => `sensors.s${String(i + 1).padStart(2, "0")}`);
    expect(await page.locator(".chart-card figcaption").allTextContents()).toEqual(first12);
    expect(await page.locator("#chart-fields summary").textContent()).toContain("12 of 16");
    // One heartbeat is one point: the time axis spans an hour around it, not years.
    expect(await page.locator(".chart[data-drawn]").first().getAttribute("data-x-span")).toBe("3600");
    expect(await page.locator('#chart-fields input[name="field"]').count()).toBe(16);

    // Pick two fields beyond the first 12 (and drop the rest): only those are charted.
    await page.click("#chart-fields summary");
    for (const label of first12) await page.uncheck(`#chart-fields input[value="${label}"]`);
    await page.check('#chart-fields input[value="sensors.s15"]');
    await page.check('#chart-fields input[value="sensors.s16"]');
    await page.click('#chart-fields button:has-text("Show charts")');
    await page.waitForURL(/field=sensors\.s16/);
    await page.waitForSelector(".chart[data-drawn] canvas");
    expect(await page.locator(".chart-card figcaption").allTextContents()).toEqual([
      "sensors.s15",
      "sensors.s16",
    ]);
    const s16 = page.locator(".chart-card", {
      has: page.locator("figcaption", { hasText: /^sensors\.s16$/ }),
    });
    const spec = JSON.parse((await s16.locator(".chart").getAttribute("data-chart"))!);
    expect(spec.series[0].values.filter((v: number | null) => v !== null)).toEqual([160]);
    expect(await page.locator("#chart-fields summary").textContent()).toContain("2 of 16");
    await screenshot(page, "console-device-telemetry-fields");

    // A range change keeps the pick; Reset returns to the first 12.
    await page.click('nav.segmented a:has-text("7 days")');
    await page.waitForURL(/range=7d/);
    expect(await page.locator(".chart-card figcaption").allTextContents()).toEqual([
      "sensors.s15",
      "sensors.s16",
    ]);
    await page.click('#chart-fields a:has-text("Reset")');
    await page.waitForURL((url) => !url.search.includes("field="));
    expect(await page.locator(".chart-card figcaption").count()).toBe(12);
    await context.close();
  }, 60_000);

  test("telemetry tab: range from the data there is; installed scripts and measurements charted first", async () => {
    const fresh = await approvedDevice(app, { product_name: "edge-gateway" });
    const body = await agentHeartbeat({ cpu: 12, memory: 40, disk: 50 });
    const scripts = body.telemetry.scripts as Record<string, unknown>;
    (scripts.cpu as { data: { output: Record<string, unknown> } }).data.output.interval_ms = 30_000;
    scripts["fan-speed"] = {
      data: { status: "success", validation_status: "valid", duration_ms: 2, output: { rpm: 1200 } },
    };
    await heartbeat(app, fresh, body);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${fresh.id}?tab=telemetry`);
    // Ten seconds of data: the last hour, not a dot at 24 hours.
    expect(await page.locator('nav.segmented a[aria-current="true"]').textContent()).toBe("1 hour");
    const charted = await page.locator(".chart-card figcaption").allTextContents();
    expect(charted[0]).toBe("fan-speed.rpm");
    expect(charted.indexOf("cpu.usage_pct")).toBeLessThan(charted.indexOf("cpu.cores"));
    // Settings and totals last: the 13th field, memory.total_bytes, is past the 12 charted.
    expect(charted.slice(-2).sort()).toEqual(["cpu.cores", "cpu.interval_ms"]);
    expect(charted).not.toContain("memory.total_bytes");
    // Data from three hours back: the 6-hour range holds it all.
    await app.database.sql`update telemetry_events set recorded_at = now() - interval '3 hours'
      where device_id = ${fresh.id}::uuid`;
    await heartbeat(app, fresh, await agentHeartbeat({ cpu: 14, memory: 41, disk: 50 }));
    await page.goto(`${app.url}/devices/${fresh.id}?tab=telemetry`);
    expect(await page.locator('nav.segmented a[aria-current="true"]').textContent()).toBe("6 hours");
    // A range chosen by the operator stays chosen.
    await page.goto(`${app.url}/devices/${fresh.id}?tab=telemetry&range=7d`);
    expect(await page.locator('nav.segmented a[aria-current="true"]').textContent()).toBe("7 days");
    await context.close();
  }, 60_000);
});
