// Reports in real Chromium, from telemetry that two products sent through the device API: build a
// report with the form, see the table and chart, filter, sort, switch modes, export CSV and compare it
// with the table; validation messages, remembered view, list filters, delete confirmation.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { approvedDevice, heartbeat, signedIn } from "../console/helpers";
import { ScriptedAgent, type ScriptOutputs } from "../helpers/agent-telemetry";
import { startTestApp } from "../helpers/app";
import { launchBrowser, PHONE, screenshot } from "../helpers/browser";

const app = await startTestApp();
const browser = await launchBrowser();

const cpuScript = { name: "cpu", schema: { type: "object", properties: { usage_pct: { type: "number" } } } };
const agents = {
  atom: new ScriptedAgent(app.config.dataDir, "atom", [
    cpuScript,
    { name: "host", schema: { type: "object", properties: { name: { type: "string" } } } },
  ]),
  gate: new ScriptedAgent(app.config.dataDir, "gate", [
    cpuScript,
    { name: "temp", schema: { type: "object", properties: { celsius: { type: "number" } } } },
  ]),
};

// 3 devices × 3 heartbeats the agents built: atom-1 cpu 10/20/30, atom-2 cpu 40/50/60, gate cpu 5/6/7.
const devices = [];
for (const [product, base] of [
  ["atom", 10],
  ["atom", 40],
  ["gate", 5],
] as const) {
  const agent = agents[product];
  const device = await approvedDevice(app, { product_name: product, schema_definition: agent.schema() });
  devices.push(device);
  for (let i = 0; i < 3; i++) {
    const value = product === "gate" ? base + i : base + 10 * i;
    const outputs: ScriptOutputs =
      product === "gate"
        ? { cpu: { usage_pct: value }, temp: { celsius: 40 } }
        : { cpu: { usage_pct: value }, host: { name: `=h${value}` } };
    await heartbeat(app, device as { id: string; token: string }, await agent.heartbeat(device.id, outputs));
  }
}

const tableText = (page: import("playwright-core").Page) =>
  page.$$eval("#report-table tbody tr", (rows) =>
    rows.map((r) => Array.from(r.querySelectorAll("td")).map((td) => td.textContent!.trim())),
  );

describe("reports in the browser", () => {
  test("operator builds, views, filters, sorts, switches modes, exports and deletes a report", async () => {
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/reports`);
    expect(await page.locator(".empty p").textContent()).toBe("No reports found. Create one to get started.");

    await page.click("text=Create Report");
    expect(await page.locator("h1").textContent()).toBe("New Report");
    await page.fill("input[name=name]", "Fleet CPU");
    await page.selectOption("select[name=field_path_0]", "cpu.usage_pct");
    await page.fill("input[name=field_alias_0]", "cpu");
    await page.selectOption("select[name=field_path_1]", "host.name");
    await screenshot(page, "reports-form");
    await page.click("button:has-text('Save')");
    expect(await page.locator(".flash.success").textContent()).toBe("Report created successfully");
    expect(await page.locator("h1").textContent()).toBe("Fleet CPU");
    const raw = await tableText(page);
    expect(raw.length).toBe(9);
    const reportUrl = page.url().split("?")[0]!;

    // Per device: bars of each device's average; sort by clicking the header (asc, then desc).
    await page.click("a[data-mode=per_device]");
    await page.waitForSelector("#report-chart[data-drawn='1']");
    expect(await page.locator("#report-chart canvas").count()).toBe(1);
    await page.click("a[data-sort='cpu.avg']");
    expect((await tableText(page)).map((r) => r[6])).toEqual(["6", "20", "50"]);
    await page.click("a[data-sort='cpu.avg']");
    expect((await tableText(page)).map((r) => r[6])).toEqual(["50", "20", "6"]);
    expect(await page.locator("th[aria-sort=descending]").textContent()).toContain("↓");

    // Filter row: numeric comparison in SQL.
    await page.selectOption("select[name=filter_column]", "cpu.max");
    await page.selectOption("select[name=filter_operator]", ">");
    await page.fill("input[name=filter_value]", "25");
    await page.click("button:has-text('Filter')");
    const filtered = await tableText(page);
    expect(filtered.map((r) => r[5])).toEqual(["60", "30"]);
    await screenshot(page, "reports-detail-per-device");

    // Export CSV honours the filter and sort and matches the table.
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export-csv")]);
    const csv = readFileSync((await download.path())!, "utf8")
      .trimEnd()
      .split("\r\n");
    expect(csv[0]).toBe("device_id,events,last_seen,cpu.last,cpu.min,cpu.max,cpu.avg,host.name");
    expect(csv.slice(1).map((l) => l.split(",")[6])).toEqual(filtered.map((r) => r[6]));
    expect(csv.slice(1).map((l) => l.split(",")[7])).toEqual(["'=h60", "'=h30"]);

    // Time buckets: one line per device.
    await page.click("#clear-filter");
    await page.click("a[data-mode=buckets]");
    await page.waitForSelector("#report-chart[data-drawn='1']");
    expect(Number(await page.locator("#report-chart").getAttribute("data-points"))).toBeGreaterThan(0);
    expect((await tableText(page)).length).toBe(3);
    await screenshot(page, "reports-detail-buckets");

    // The last view is remembered for this operator.
    await page.goto(reportUrl);
    expect(await page.locator("a[data-mode=buckets]").getAttribute("aria-current")).toBe("true");

    // Validation: a taken name (any case) and a text value for a number, nothing stored.
    await page.goto(`${app.url}/reports/new`);
    await page.fill("input[name=name]", "fleet cpu");
    await page.selectOption("select[name=field_path_0]", "temp.celsius");
    await page.selectOption("select[name=schema]", { label: `atom ${agents.atom.schema().version}` });
    await page.click("button:has-text('Load this schema')");
    // A field the new schema does not have asks to be reselected.
    expect(await page.locator("select[name=field_path_0] + .field-error").textContent()).toBe(
      "Selection is not valid for active schema: temp.celsius. Reselect it.",
    );
    await page.selectOption("select[name=field_path_0]", "cpu.usage_pct");
    await page.selectOption("select[name=filter_target_0]", "path:cpu.usage_pct");
    await page.selectOption("select[name=filter_operator_0]", ">");
    await page.fill("input[name=filter_value_0]", "lots");
    await page.click("button:has-text('Save')");
    expect(await page.locator("#form-summary").textContent()).toBe("Choose a unique report title.");
    expect(await page.locator("input[name=name] + .field-error").textContent()).toBe(
      "Report title is already used.",
    );
    expect(await page.locator("input[name=filter_value_0] + .field-error").textContent()).toBe(
      "Value must be a number.",
    );
    await screenshot(page, "reports-form-errors");
    const [{ n }] = await app.database.sql<{ n: number }[]>`select count(*)::int as n from custom_reports`;
    expect(n).toBe(1);

    // List: name filter and "contains all these fields" chips.
    await page.goto(`${app.url}/reports`);
    await page.fill("input[name=name]", "CPU");
    await page.selectOption("#report-filters select[name=field]", "temp.celsius");
    await page.click("#report-filters button:has-text('Apply')");
    expect(await page.locator("#report-table").textContent()).toBe(
      "No reports found. Create one to get started.",
    );
    await page.click(".chip:has-text('temp.celsius')");
    expect(await page.locator("#report-table tbody tr").count()).toBe(1);
    await screenshot(page, "reports-list");

    // Delete with confirmation.
    await page.click("a[title=Delete]");
    expect(await page.locator("h1").textContent()).toBe("Delete Report");
    expect(await page.locator("section.card p").textContent()).toBe(
      "Are you sure you want to delete Fleet CPU? This action cannot be undone.",
    );
    await page.click("button:has-text('Delete')");
    expect(await page.locator(".flash.success").textContent()).toBe("Report deleted");
    await context.close();
  });

  test("a viewer reads reports but gets no write controls", async () => {
    const created = await app.fetch("/api/v1/reports", {
      method: "POST",
      headers: { authorization: `Bearer ${await app.token("operator")}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Temps",
        config: {
          schema_id: "gate",
          schema_version: agents.gate.schema().version,
          fields: [{ path: "temp.celsius" }],
        },
      }),
    });
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/reports`);
    expect(await page.locator("text=Create Report").count()).toBe(0);
    expect(await page.locator("a[title=Delete]").count()).toBe(0);
    await page.goto(`${app.url}/reports/${id}`);
    expect((await tableText(page)).length).toBe(3);
    expect(await page.locator("a:has-text('Edit')").count()).toBe(0);
    await page.goto(
      `${app.url}/reports/${id}?filter_column=temp.celsius&filter_operator=%3E&filter_value=99`,
    );
    expect(await page.locator("#report-empty").textContent()).toBe("No data found matching report criteria.");
    await page.setViewportSize(PHONE);
    await page.goto(`${app.url}/reports/${id}?mode=per_device`);
    await screenshot(page, "reports-detail-phone");
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(
      true,
    );
    await page.goto(`${app.url}/reports/${id}?sort_by=nope`);
    expect(await page.locator("#view-problems").textContent()).toStartWith(
      "Some view settings were not valid",
    );
    await context.close();

    // Saved preferences that no longer fit the report are reset, and the page says so.
    const session = await app.session("viewer");
    await app.database.sql`insert into report_view_preferences (scope, view_key, preferences)
      values (${`operator=${session.operatorId}`}, ${`reports:show:${id}`}, ${JSON.stringify({ sort_by: "gone" })}::jsonb)`;
    const html = await (await app.fetch(`/reports/${id}`, { headers: { cookie: session.cookie } })).text();
    expect(html).toContain(
      "Saved report view preferences were invalid and have been reset to safe defaults.",
    );
  });
});
