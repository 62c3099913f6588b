import { describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { LAPTOP, launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { e2eClient, startE2EApp, writeE2EFixture } from "./fixtures";

const fixture = writeE2EFixture();
const app = await startE2EApp(fixture);
const api = e2eClient(app);
const browser: Browser = await launchBrowser();

const step = (status: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    schema: "e2e_log.v1",
    timestamp: new Date().toISOString(),
    level: "step",
    status,
    journey_id: "dashboard",
    action: "fetch_dashboard",
    expect: "dashboard_payload",
    duration_ms: 12,
    http_status: 200,
    ...extra,
  });

async function seedRuns() {
  // A passed run with logs, a failed run, one blocked, and an active one.
  const passed = (await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" }))
    .json.data.id;
  const log = [
    JSON.stringify({
      schema: "e2e_log.v1",
      timestamp: new Date().toISOString(),
      level: "journey",
      event: "started",
      status: "running",
      journey_id: "dashboard",
    }),
    step("passed"),
    // A runner that did not redact: the page must not show these secrets to viewers.
    step("passed", {
      step_id: "second_look",
      body_preview: '{"data":{"id":"d1","api_token":"SECRET-DEVICE-TOKEN-123"}}',
      request_headers: { authorization: "Bearer SECRET-BEARER-456" },
    }),
    JSON.stringify({
      schema: "e2e_log.v1",
      timestamp: new Date().toISOString(),
      level: "journey",
      event: "completed",
      status: "passed",
      journey_id: "dashboard",
      duration_ms: 30,
      steps_run: 2,
      steps_passed: 2,
      steps_failed: 0,
    }),
    "this line is not json <script>alert(1)</script> GET /x?api_key=SECRET-KEY-789",
  ].join("\n");
  await api.request("PUT", `/e2e/runs/${passed}/results/dashboard/log`, log);
  await api.submit(passed, [
    { journey_id: "dashboard", status: "passed", duration_ms: 30 },
    { journey_id: "dashboard_again", status: "passed", duration_ms: 18 },
  ]);
  const failed = (
    await api.create({ suite_id: "three", environment_label: "staging", trigger_source: "manual" })
  ).json.data.id;
  await api.request(
    "PUT",
    `/e2e/runs/${failed}/results/auth/log`,
    step("failed", {
      journey_id: "auth",
      action: "register_device",
      expect: "uuid_returned",
      http_status: 500,
      error_code: "HTTP_STATUS_UNEXPECTED",
      error_message: "POST /api/v1/devices/register answered 500, expected 201",
    }),
  );
  await api.submit(failed, [
    { journey_id: "dashboard", status: "passed" },
    {
      journey_id: "auth",
      status: "failed",
      failure_step: "register_device",
      failure_reason: "answered 500, expected 201 <b>bold?</b>",
    },
    { journey_id: "dashboard_again", status: "skipped" },
  ]);
  const blocked = (await api.create({ suite_id: "smoke", environment_label: "local", trigger_source: "ci" }))
    .json.data.id;
  await api.submit(blocked, [
    { journey_id: "dashboard", status: "passed" },
    { journey_id: "dashboard_again", status: "blocked" },
  ]);
  const active = (await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" }))
    .json.data.id;
  await api.submit(active, [{ journey_id: "dashboard", status: "running" }]);
  return { passed, failed, blocked, active };
}

const runs = await seedRuns();

async function signedIn(role: "admin" | "viewer") {
  const session = await app.session(role);
  const context = await browser.newContext({ viewport: LAPTOP });
  const [name, value] = session.cookie.split("=");
  await context.addCookies([{ name: name!, value: value!, url: app.url }]);
  return context;
}

describe("E2E runs page", () => {
  test("viewer: list with filters, search, sort, run detail with journeys and a readable log; no delete", async () => {
    const context = await signedIn("viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/e2e`);
    expect(await page.locator("h1").textContent()).toBe("E2E runs");
    expect(await page.locator("table.e2e-runs tbody tr").count()).toBe(4);
    expect(await page.locator('input[name="ids"]').count()).toBe(0);
    expect(await page.locator("text=Delete selected").count()).toBe(0);
    await screenshot(page, "e2e-runs-viewer");

    await page.selectOption('select[name="status"]', "failed");
    await page.click("form.filters button[type=submit]");
    await page.waitForURL(/status=failed/);
    expect(await page.locator("table.e2e-runs tbody tr").count()).toBe(1);
    expect(await page.getAttribute("#export-runs-csv", "href")).toBe("/e2e.csv?status=failed");
    await page.goto(`${app.url}/e2e?q=staging`);
    expect(await page.locator("table.e2e-runs tbody tr").count()).toBe(1);
    await page.goto(`${app.url}/e2e?trigger=ci&environment=plain`);
    expect(await page.locator("table.e2e-runs tbody tr").count()).toBe(2);
    await page.goto(`${app.url}/e2e?sort=environment_label&dir=asc`);
    const envs = await page.locator("table.e2e-runs tbody tr td:nth-child(3)").allTextContents();
    expect(envs).toEqual([...envs].sort());

    await page.goto(`${app.url}/e2e?run=${runs.failed}`);
    const journeys = page.locator("table.e2e-journeys tbody tr");
    expect(await journeys.count()).toBe(3);
    expect(await journeys.nth(2).textContent()).toContain("register_device");
    expect(await journeys.nth(2).textContent()).toContain("answered 500, expected 201 <b>bold?</b>"); // escaped, shown as text
    await page.click("table.e2e-journeys >> text=View log");
    await page.waitForURL(/journey=auth/);
    expect(await page.locator(".log-line.step").first().textContent()).toContain("HTTP_STATUS_UNEXPECTED");
    await screenshot(page, "e2e-run-failed-log");

    await page.goto(`${app.url}/e2e?run=${runs.passed}&journey=dashboard`);
    const steps = page.locator(".log-line.step strong");
    expect(await steps.allTextContents()).toEqual(["STEP 01", "STEP 02"]);
    expect(await page.locator(".log-line.invalid").textContent()).toContain("Not JSON");
    const shown = await page.content();
    for (const secret of ["SECRET-DEVICE-TOKEN-123", "SECRET-BEARER-456", "SECRET-KEY-789"]) {
      expect(shown).not.toContain(secret);
    }
    expect(shown).toContain("[REDACTED]");
    expect(await page.evaluate(() => (window as unknown as { alerted?: boolean }).alerted)).toBeUndefined();
    await screenshot(page, "e2e-run-log-viewer");
    await page.goto(`${app.url}/e2e?run=${runs.passed}&journey=dashboard_again`);
    expect(await page.locator(".log-panel").textContent()).toContain("has no log");

    // A viewer cannot delete, even by posting the form directly.
    const denied = await page.request.post(`${app.url}/e2e`, {
      form: { action: "delete", ids: runs.passed },
      maxRedirects: 0,
    });
    expect(denied.status()).toBe(403);
    await context.close();
  }, 30_000);

  test("live refresh: a run that changes appears without reloading", async () => {
    const context = await signedIn("viewer");
    const page = await context.newPage();
    // The page's timers run on a clock the test moves: its 5 s refresh comes when the test says.
    await page.clock.install();
    await page.goto(`${app.url}/e2e?run=${runs.active}`);
    expect(await page.locator("#e2e-detail .card-head .badge").textContent()).toBe("running");
    await api.submit(runs.active, [
      { journey_id: "dashboard", status: "passed" },
      { journey_id: "dashboard_again", status: "passed" },
    ]);
    await page.clock.runFor(5_000);
    await page.waitForFunction(
      () => document.querySelector("#e2e-detail .card-head .badge")?.textContent === "passed",
      undefined,
      { timeout: 8000 },
    );
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll("table.e2e-runs .badge")).filter(
          (b) => b.textContent === "running",
        ).length === 0,
      undefined,
      { timeout: 8000 },
    );
    await context.close();
  }, 30_000);

  test("the live refresh pauses while a run is ticked, and resumes when none is", async () => {
    const context = await signedIn("admin");
    const page = await context.newPage();
    await page.clock.install();
    await page.goto(`${app.url}/e2e`);
    // Requests htmx sends (counted as it sends them, inside the timer's own turn) and those that leave.
    await page.evaluate(() => {
      const counted = window as unknown as { sent: number };
      counted.sent = 0;
      document.addEventListener("htmx:beforeSend", () => counted.sent++);
    });
    let refreshes = 0;
    page.on("request", (request) => {
      if (request.url().includes("fragment=runs")) refreshes++;
    });
    await page.check(`input[name="ids"][value="${runs.passed}"]`);
    await page.clock.runFor(5_500); // longer than the 5 s refresh
    expect(await page.evaluate(() => (window as unknown as { sent: number }).sent)).toBe(0);
    expect(refreshes).toBe(0);
    expect(await page.isChecked(`input[name="ids"][value="${runs.passed}"]`)).toBe(true);
    await page.uncheck(`input[name="ids"][value="${runs.passed}"]`);
    const refreshed = page.waitForRequest((request) => request.url().includes("fragment=runs"), {
      timeout: 7_000,
    });
    await page.clock.runFor(5_500);
    await refreshed;
    await context.close();
  }, 30_000);

  test("admin: select runs, confirm, delete; pagination", async () => {
    const context = await signedIn("admin");
    const page = await context.newPage();
    await page.goto(`${app.url}/e2e`);
    await screenshot(page, "e2e-runs-admin");
    // "Select all" ticks and clears the page's runs (a script of the page, not an inline handler: CSP).
    await page.check("input[data-check-all]");
    expect(await page.locator('input[name="ids"]:checked').count()).toBe(4);
    await page.uncheck("input[data-check-all]");
    expect(await page.locator('input[name="ids"]:checked').count()).toBe(0);
    await page.check(`input[name="ids"][value="${runs.blocked}"]`);
    await page.check(`input[name="ids"][value="${runs.failed}"]`);
    let asked = "";
    page.once("dialog", (dialog) => {
      asked = dialog.message();
      void dialog.dismiss();
    });
    await page.click("text=Delete selected");
    expect(asked).toContain("cannot be undone");
    expect(await page.locator("table.e2e-runs tbody tr").count()).toBe(4);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click("text=Delete selected");
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toBe("Deleted 2 runs and their journey logs.");
    expect(await page.locator("table.e2e-runs tbody tr").count()).toBe(2);
    expect((await api.get(`/e2e/runs/${runs.failed}`)).response.status).toBe(404);

    // 30 more finished runs → two pages of 25.
    for (let i = 0; i < 30; i++) {
      const id = (await api.create({ suite_id: "smoke", environment_label: "bench", trigger_source: "ci" }))
        .json.data.id;
      await api.request("POST", `/e2e/runs/${id}/cancel`);
    }
    await page.goto(`${app.url}/e2e`);
    expect(await page.locator("table.e2e-runs tbody tr").count()).toBe(25);
    expect(await page.locator(".pager").textContent()).toContain("Showing 1–25 of 32");
    await page.click("text=Older →");
    await page.waitForURL(/page=2/);
    expect(await page.locator("table.e2e-runs tbody tr").count()).toBe(7);
    await page.setViewportSize(PHONE);
    await page.goto(`${app.url}/e2e?run=${runs.passed}&journey=dashboard`);
    await screenshot(page, "e2e-run-phone");
    await context.close();
  }, 60_000);

  test("/e2e.csv streams every run newest first, across keyset batches", async () => {
    await app.database.sql`insert into e2e_runs (suite_id, journey_ids, environment_label, trigger_source,
        protocol_version, runner_id, status, started_at, finished_at)
      select 'bulk', array['a','b'], 'csv-env', 'ci', '1', 'ci-runner', 'passed',
        now() - make_interval(days => 30, secs => g), now() - make_interval(days => 30, secs => g - 1)
      from generate_series(1, 520) g`;
    const viewer = await signedIn("viewer");
    const cookies = await viewer.cookies();
    const cookie = cookies.map((c) => `${c.name}=${c.value}`).join("; ");
    const response = await app.fetch("/e2e.csv", { headers: { cookie } });
    expect(response.status).toBe(200);
    const lines = (await response.text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe(
      "id,suite_id,environment_label,trigger_source,status,started_at,finished_at,journeys,runner_id,journeys_passed,journeys_failed,duration_ms",
    );
    const [{ n }] = (await app.database.sql`select count(*)::int as n from e2e_runs`) as unknown as [
      { n: number },
    ];
    expect(lines.length - 1).toBe(n);
    const ids = lines.slice(1).map((l) => l.split(",")[0]);
    expect(new Set(ids).size).toBe(ids.length); // no run twice at a batch boundary
    const times = lines.slice(1).map((l) => l.split(",")[5]!);
    expect(times).toEqual([...times].sort().reverse());
    expect(lines.filter((l) => l.includes(",bulk,csv-env,ci,passed,")).length).toBe(520);
    await viewer.close();
  }, 30_000);
});
