import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { e2eClient, journeysWithOnlyDashboard, runnerCli, startE2EApp, writeE2EFixture } from "./fixtures";
import { parseJUnit, type XmlElement } from "./junit-schema";

const fixture = writeE2EFixture();
const app = await startE2EApp(fixture);
const api = e2eClient(app);
const { outpost, finish } = runnerCli(app, fixture);

const child = (element: XmlElement, name: string) => element.children.find((c) => c.name === name);
const cases = (report: XmlElement) =>
  report.children[0]!.children.filter((c) => c.name === "testcase").map((c) => ({
    name: c.attributes.name,
    time: Number(c.attributes.time),
    outcome: c.children.find((x) => x.name !== "system-out")?.name ?? "passed",
    message: c.children.find((x) => x.name !== "system-out")?.attributes.message,
    text: c.children.find((x) => x.name !== "system-out")?.text,
    out: child(c, "system-out")?.text,
  }));
const property = (report: XmlElement, name: string) =>
  child(report.children[0]!, "properties")!.children.find((p) => p.attributes.name === name)?.attributes
    .value;

function readReport(file: string) {
  return parseJUnit(readFileSync(path.join(fixture.dir, file), "utf8"));
}

describe("outpost e2e run --junit", () => {
  test("a passing run: one testsuite, one testcase per journey with its duration and log, the console URL", async () => {
    const result = await finish(
      outpost(["run", "--suite", "smoke", "--env", "plain", "--json", "--junit", "reports/pass.xml"]),
    );
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout);
    const url = `${app.url}/e2e?run=${summary.run_id}`;
    expect(summary.console_url).toBe(url);
    expect(summary.junit_file).toBe(path.join(fixture.dir, "reports/pass.xml"));
    expect(result.stderr).toContain(`console: ${url}`);
    // The link opens that run on the runs page (its detail, its row highlighted).
    const session = await app.session("viewer");
    const opened = await fetch(url, { headers: { cookie: session.cookie } });
    expect(opened.status).toBe(200);
    const html = await opened.text();
    expect(html).toContain(`<h2>Run ${summary.run_id}</h2>`);
    expect(html).toMatch(
      new RegExp(`<tr class="selected">(?:(?!</tr>).)*${summary.run_id.slice(0, 8)}`, "s"),
    );
    const report = readReport("reports/pass.xml");
    expect(report.children.map((c) => c.name)).toEqual(["testsuite"]);
    const suite = report.children[0]!;
    expect(suite.attributes).toMatchObject({
      name: "smoke (plain)",
      tests: "2",
      failures: "0",
      errors: "0",
      skipped: "0",
      id: summary.run_id,
    });
    expect(property(report, "console_url")).toBe(url);
    expect(property(report, "run_status")).toBe("passed");
    const got = cases(report);
    expect(got.map((c) => [c.name, c.outcome])).toEqual([
      ["dashboard", "passed"],
      ["dashboard_again", "passed"],
    ]);
    for (const [index, c] of got.entries()) {
      expect(c.time).toBeCloseTo(summary.journeys[index].duration_ms / 1000, 3);
      expect(c.out).toContain("journey completed passed");
    }
    expect(got[1]!.out).toContain("step second_look passed (fetch_dashboard → dashboard_payload");
  }, 30_000);

  test("a failing run still writes the report: <failure> names the step and reason; exit 1", async () => {
    const journeysDir = journeysWithOnlyDashboard(fixture, "only-dashboard");
    const result = await finish(
      outpost([
        "run",
        "--suite",
        "smoke",
        "--env",
        "plain",
        "--journeys-dir",
        journeysDir,
        "--junit",
        "reports/fail.xml",
      ]),
    );
    expect(result.code).toBe(1);
    const runId = /E2E run ([0-9a-f-]{36})/.exec(result.stdout)![1]!;
    expect(result.stdout).toContain(`Console: ${app.url}/e2e?run=${runId}`);
    expect(result.stdout).toContain("JUnit report: ");
    const report = readReport("reports/fail.xml");
    expect(report.children[0]!.attributes).toMatchObject({ tests: "2", failures: "1", skipped: "0" });
    const [, failed] = cases(report);
    expect(failed!.outcome).toBe("failure");
    expect(failed!.message).toStartWith("load_journey: ");
    expect(failed!.text).toContain("failed at step load_journey");
    expect(failed!.out).toContain("journey completed failed at load_journey");
  }, 30_000);

  test("a run replayed by its key: the stored failure and log are in the report, control characters replaced", async () => {
    const created = await api.create({
      suite_id: "three",
      environment_label: "local",
      trigger_source: "ci",
      idempotency_key: "pipeline-901",
    });
    const runId = created.json.data.id as string;
    const nasty = `tricky <&> "quotes" ]]> \u0001\u0008\u001b[31mred\u001b[0m \uFFFF end`;
    const submitted = await api.submit(runId, [
      { journey_id: "dashboard", status: "failed", failure_step: "look", failure_reason: nasty },
    ]);
    expect(submitted.response.status).toBe(202);
    const log = `${JSON.stringify({ schema: "e2e_log.v1", level: "step", status: "failed", action: "fetch_dashboard", expect: "dashboard_payload", duration_ms: 5, error_message: nasty })}\nplain line \u0007 bell\n`;
    const uploaded = await api.request("PUT", `/e2e/runs/${runId}/results/dashboard/log`, log, {
      "content-type": "application/x-ndjson",
    });
    expect(uploaded.status).toBe(200);

    const result = await finish(
      outpost([
        "run",
        "--suite",
        "three",
        "--env",
        "local",
        "--idempotency-key",
        "pipeline-901",
        "--junit",
        "reports/replayed.xml",
      ]),
    );
    expect(result.code).toBe(1);
    const xml = readFileSync(path.join(fixture.dir, "reports/replayed.xml"), "utf8");
    const forbidden = [...xml].filter((ch) => {
      const code = ch.codePointAt(0)!;
      return (code < 0x20 && ![9, 10, 13].includes(code)) || code === 0xffff;
    });
    expect(forbidden).toEqual([]);
    const report = parseJUnit(xml);
    expect(report.children[0]!.attributes).toMatchObject({
      id: runId,
      tests: "3",
      failures: "1",
      skipped: "0",
    });
    const got = cases(report);
    expect(got.map((c) => [c.name, c.outcome])).toEqual([
      ["dashboard", "failure"],
      ["dashboard_again", "passed"],
      ["auth", "passed"],
    ]);
    expect(got[0]!.message).toBe(
      `look: tricky <&> "quotes" ]]> \uFFFD\uFFFD\uFFFD[31mred\uFFFD[0m \uFFFD end`,
    );
    expect(got[0]!.out).toContain('tricky <&> "quotes" ]]>');
    expect(got[0]!.out).toContain("plain line \uFFFD bell");
    expect(got[2]!.out).toContain("journey completed passed");
  }, 30_000);

  test("a cancelled run still gets a report: its journeys are <skipped> with the status", async () => {
    const created = await api.create({
      suite_id: "smoke",
      environment_label: "staging",
      trigger_source: "ci",
      idempotency_key: "pipeline-902",
    });
    expect((await api.request("POST", `/e2e/runs/${created.json.data.id}/cancel`)).status).toBe(202);
    const result = await finish(
      outpost([
        "run",
        "--suite",
        "smoke",
        "--env",
        "staging",
        "--idempotency-key",
        "pipeline-902",
        "--junit",
        "reports/cancelled.xml",
      ]),
    );
    expect(result.code).toBe(1);
    const report = readReport("reports/cancelled.xml");
    expect(report.children[0]!.attributes).toMatchObject({ tests: "2", failures: "0", skipped: "2" });
    expect(cases(report).map((c) => [c.outcome, c.message])).toEqual([
      ["skipped", "cancelled"],
      ["skipped", "cancelled"],
    ]);
    expect(property(report, "run_status")).toBe("cancelled");
  }, 30_000);

  test("a run that cannot be created: the report has one <error> testcase with the reason; exit 2", async () => {
    const result = await finish(
      outpost(["run", "--suite", "smoke", "--env", "production", "--junit", "reports/refused.xml"]),
    );
    expect(result.code).toBe(2);
    const report = readReport("reports/refused.xml");
    expect(report.children[0]!.attributes).toMatchObject({ tests: "1", errors: "1" });
    const [only] = cases(report);
    expect(only!.outcome).toBe("error");
    expect(only!.message).toContain("invalid_request");
  }, 30_000);
});
