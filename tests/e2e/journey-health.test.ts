import { describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { LAPTOP, launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { e2eClient, RUNNER_ID, RUNNER_TOKEN, startE2EApp, writeE2EFixture } from "./fixtures";

const fixture = writeE2EFixture({
  configYaml: `protocol_versions: ["1"]
allowed_environments: [same_commit, back_and_forth, broken, old_flips, stable, later]
suites:
  smoke: [dashboard, dashboard_again]
journeys_dir: journeys
runners:
  ${RUNNER_ID}: ${RUNNER_TOKEN}
`,
});
const app = await startE2EApp(fixture);
const api = e2eClient(app);

/** A finished run of `smoke`: dashboard with `outcome`, dashboard_again passed. */
async function run(environment: string, outcome: "passed" | "failed", commit?: string, durationMs = 100) {
  const created = await api.create({
    suite_id: "smoke",
    environment_label: environment,
    trigger_source: "ci",
    ...(commit ? { metadata: { commit } } : {}),
  });
  expect(created.response.status).toBe(201);
  const id = created.json.data.id as string;
  const submitted = await api.submit(id, [
    {
      journey_id: "dashboard",
      status: outcome,
      duration_ms: durationMs,
      ...(outcome === "failed" ? { failure_step: "fetch_dashboard", failure_reason: "answered 503" } : {}),
    },
    { journey_id: "dashboard_again", status: "passed", duration_ms: 40 },
  ]);
  expect(submitted.response.status).toBe(202);
  return id;
}

// Oldest first. Same commit: passed, failed, passed on abc → flaky.
await run("same_commit", "passed", "abc0000000000000000000000000000000000001", 120);
await run("same_commit", "failed", "abc0000000000000000000000000000000000001", 900);
const sameCommitLatest = await run("same_commit", "passed", "abc0000000000000000000000000000000000001", 150);
// No commit: passed, failed, passed within minutes → flaky.
for (const outcome of ["passed", "failed", "passed"] as const) await run("back_and_forth", outcome);
// Broken by a commit and staying broken: one change, not flaky.
await run("broken", "passed", "def0000000000000000000000000000000000001");
await run("broken", "failed", "def0000000000000000000000000000000000002");
await run("broken", "failed", "def0000000000000000000000000000000000003");
// No commit, back and forth, but days apart → not flaky.
const old = [
  await run("old_flips", "passed"),
  await run("old_flips", "failed"),
  await run("old_flips", "passed"),
];
for (const [index, id] of old.entries())
  await app.database
    .sql`update e2e_runs set started_at = now() - ${`${(3 - index) * 2} days`}::interval where id = ${id}`;
// An active run is not part of the history.
await run("stable", "passed");
await api.create({ suite_id: "smoke", environment_label: "stable", trigger_source: "ci" });

async function health(query = "") {
  const token = await app.token("viewer");
  const response = await app.fetch(`/api/json/e2e_journey_health${query}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe("journey health", () => {
  test("over /api/json: pass rate, flaky on one commit or back and forth within a day, history newest first", async () => {
    const all = await health("?filter[suite_id]=smoke");
    expect(all.status).toBe(200);
    const byKey = new Map(
      (all.body.data as any[]).map((r) => [
        `${r.attributes.environment_label}/${r.attributes.journey_id}`,
        r,
      ]),
    );
    const dashboard = (env: string) => byKey.get(`${env}/dashboard`)!.attributes;
    expect(byKey.get("same_commit/dashboard")!).toMatchObject({
      type: "e2e_journey_health",
      id: "smoke/same_commit/dashboard",
    });
    expect(dashboard("same_commit")).toMatchObject({
      runs: 3,
      passed: 2,
      failed: 1,
      flaky: true,
      flaky_reason: "passed and failed on commit abc000000000",
      last_status: "passed",
    });
    expect(dashboard("same_commit").pass_rate).toBeCloseTo(2 / 3, 5);
    expect(dashboard("same_commit").history.map((h: any) => [h.status, h.duration_ms])).toEqual([
      ["passed", 150],
      ["failed", 900],
      ["passed", 120],
    ]);
    expect(dashboard("same_commit").history[0].run_id).toBe(sameCommitLatest);
    expect(dashboard("back_and_forth")).toMatchObject({ flaky: true, passed: 2, failed: 1 });
    expect(dashboard("back_and_forth").flaky_reason).toContain("back and forth within 24 h");
    expect(dashboard("broken")).toMatchObject({ flaky: false, passed: 1, failed: 2, last_status: "failed" });
    expect(dashboard("old_flips")).toMatchObject({ flaky: false, passed: 2, failed: 1 });
    expect(dashboard("stable")).toMatchObject({ flaky: false, runs: 1, pass_rate: 1 });
    expect(byKey.get("same_commit/dashboard_again")!.attributes).toMatchObject({
      flaky: false,
      pass_rate: 1,
    });

    const flaky = await health("?filter[flaky]=true&filter[environment_label]=same_commit");
    expect((flaky.body.data as any[]).map((r) => r.id)).toEqual(["smoke/same_commit/dashboard"]);
    expect((await health("?filter[flaky]=maybe")).status).toBe(400);
    const anonymous = await app.fetch("/api/json/e2e_journey_health");
    expect(anonymous.status).toBe(401);

    // A new finished run enters the window.
    await run("later", "passed");
    expect((await health("?filter[environment_label]=later")).body.data[0].attributes).toMatchObject({
      runs: 1,
      passed: 1,
    });
    await run("later", "failed");
    expect((await health("?filter[environment_label]=later")).body.data[0].attributes).toMatchObject({
      runs: 2,
      passed: 1,
      failed: 1,
      last_status: "failed",
    });
  });

  test("runs page (Chromium, 1366 and 390 px): flaky card, pass rate with the flaky badge, history sparkline and panel", async () => {
    const browser: Browser = await launchBrowser();
    const session = await app.session("viewer");
    const [name, value] = session.cookie.split("=");
    for (const [label, viewport] of [
      ["laptop", LAPTOP],
      ["phone", PHONE],
    ] as const) {
      const context = await browser.newContext({ viewport });
      await context.addCookies([{ name: name!, value: value!, url: app.url }]);
      const page = await context.newPage();
      await page.goto(`${app.url}/e2e`);
      const flakyRows = page.locator("#e2e-flaky table.e2e-flaky tbody tr");
      expect(await flakyRows.count()).toBe(2);
      const flakyText = (await flakyRows.allTextContents()).join("\n");
      expect(flakyText).toContain("same_commit");
      expect(flakyText).toContain("back_and_forth");
      expect(flakyText).not.toContain("broken");
      expect(await page.locator("#e2e-flaky .badge.warn", { hasText: "flaky" }).count()).toBe(2);

      await page.goto(`${app.url}/e2e?run=${sameCommitLatest}`);
      const journeys = page.locator("table.e2e-journeys tbody tr");
      expect(await journeys.nth(0).locator(".pass-rate").textContent()).toBe("67% (2/3)flaky");
      expect(await journeys.nth(0).locator(".flaky-badge").getAttribute("title")).toBe(
        "passed and failed on commit abc000000000",
      );
      expect(await journeys.nth(1).locator(".pass-rate").textContent()).toBe("100% (3/3)");
      const bars = journeys.nth(0).locator("svg.sparkline rect");
      expect(await bars.count()).toBe(3);
      expect(await bars.evaluateAll((rects) => rects.map((r) => r.getAttribute("class")))).toEqual([
        "spark-passed",
        "spark-failed",
        "spark-passed",
      ]);
      // The failed run took longest: the tallest bar.
      const heights = await bars.evaluateAll((rects) => rects.map((r) => Number(r.getAttribute("height"))));
      expect(Math.max(...heights)).toBe(heights[1]!);
      const box = await journeys.nth(0).locator("svg.sparkline").boundingBox();
      expect(box!.width).toBeGreaterThan(10);
      expect(box!.height).toBeGreaterThan(10);

      await journeys.nth(0).locator("a.history-link").click();
      await page.waitForURL(/history=dashboard/);
      const history = page.locator("#journey-history");
      expect(await history.locator("h3").textContent()).toBe("History of dashboard · smoke in same_commit");
      expect(await history.locator("table.e2e-history tbody tr").count()).toBe(3);
      expect(await history.locator("svg.sparkline.large rect").count()).toBe(3);
      expect(await history.locator("table.e2e-history tbody tr").nth(1).textContent()).toContain(
        "abc000000000",
      );
      // Nothing wider than the screen but the scrollable tables.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      await screenshot(page, `e2e-journey-history-${label}`);
      await context.close();
    }
  }, 60_000);
});
