import { afterAll, describe, expect, test } from "bun:test";
import { evaluateAlerts } from "../../modules/alerts/evaluation";
import { scriptText } from "../agent/helpers";
import { schemaOf } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { agentHarness } from "./agent-harness";

// Issue 54.1: the agent announces a new schema version whenever its script set changes. A report and
// an alert rule on a built-in field keep working (rows, history, editing, alerts) while the real
// agent installs a script and removes it again.
const app = await startTestApp();
const sql = app.database.sql;
const product = "script-changes";
const { api, pollOnce, queue, commandStatus, latestScripts, registerApproved, cleanup } = await agentHarness(
  app,
  product,
);
afterAll(cleanup);

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

const versionOf = async (deviceId: string) =>
  ((await schemaOf(app, deviceId)) as { version: string }).version;
const eventCount = async (deviceId: string) =>
  (
    await sql<
      { n: number }[]
    >`select count(*)::int as n from telemetry_events where device_id = ${deviceId}::uuid`
  )[0]!.n;
const optionKeys = async () =>
  (
    await api("GET", `/api/v1/builder-schemas/${product}/versions/current/options?builder=report`)
  ).body.data.options.map((o: Json) => o.key);
const rows = async (reportId: string) =>
  (await api("GET", `/api/v1/reports/${reportId}/results?limit=1000`)).body.data.rows as Json[];

describe("a device's scripts change", () => {
  test("reports keep every row and their history, rules stay editable and alerts fire through install and removal", async () => {
    const device = await registerApproved();
    await pollOnce();
    await pollOnce();
    const before = await versionOf(device.id);

    // A client names the schema as the builder lists it.
    const listed = (await api("GET", "/api/v1/builder-schemas")).body.data.find(
      (r: Json) => r.schema_id === product,
    );
    const schema = { schema_id: product, schema_version: listed.schema_version };
    const report = await api("POST", "/api/v1/reports", {
      name: "CPU through script changes",
      config: { ...schema, fields: [{ path: "cpu.usage_pct" }], range: { preset: "1h" } },
    });
    expect(report.status).toBe(201);
    const reportId = report.body.data.id;
    expect(await rows(reportId)).toHaveLength(2);
    const ruleDoc = (attributes: Record<string, unknown>, id?: string) => ({
      data: { type: "alert_rule", ...(id ? { id } : {}), attributes },
    });
    const rule = await api(
      "POST",
      "/api/json/alert_rules",
      ruleDoc({
        name: "CPU busy",
        product_name: product,
        schema_version: listed.schema_version,
        condition_field: "cpu.usage_pct",
        operator: ">=",
        threshold_value: "0",
      }),
    );
    expect(rule.status).toBe(201);
    const ruleId = rule.body.data.id;
    const editable = async (threshold: string) => {
      const patched = await api(
        "PATCH",
        `/api/json/alert_rules/${ruleId}`,
        ruleDoc({ threshold_value: threshold }, ruleId),
      );
      expect({ status: patched.status, deprecated: patched.body.data?.attributes.deprecated }).toEqual({
        status: 200,
        deprecated: false,
      });
      const page = await app.fetch(`/alerts/${ruleId}/edit`, {
        headers: { cookie: (await app.session("operator")).cookie },
      });
      expect(await page.text()).not.toContain("Editing is disabled");
    };

    // install_script: the device announces another schema version, with the script's field added.
    const script = scriptText(
      "gauge",
      1,
      "function main() { return { level: 7 }; }",
      "type: object\nproperties:\n  level: {type: integer}",
    );
    const install = await queue(device.id, {
      type: "install_script",
      payload: { name: "gauge", data: script },
    });
    await pollOnce();
    expect((await commandStatus(install)).status).toBe("succeeded");
    await pollOnce();
    expect((await latestScripts(device.id)).gauge?.data.output).toEqual({ level: 7 });
    const installed = await versionOf(device.id);
    expect(installed).not.toBe(before);
    expect(await rows(reportId)).toHaveLength(await eventCount(device.id));
    expect(await eventCount(device.id)).toBe(4);
    await editable("1");
    expect(await optionKeys()).toContain("gauge.level");
    const gaugeReport = await api("POST", "/api/v1/reports", {
      name: "Gauge",
      config: { ...schema, fields: [{ path: "gauge.level" }], range: { preset: "1h" } },
    });
    expect(gaugeReport.status).toBe(201);

    // remove_script: the first version again; the script's field is gone from every device.
    const remove = await queue(device.id, { type: "remove_script", args: ["gauge"] });
    await pollOnce();
    expect((await commandStatus(remove)).status).toBe("succeeded");
    await pollOnce();
    expect(await versionOf(device.id)).toBe(before);
    const all = await rows(reportId);
    expect(all).toHaveLength(6);
    expect(all.every((r) => typeof r["cpu.usage_pct"] === "number")).toBe(true);
    await editable("0");
    expect(await optionKeys()).not.toContain("gauge.level");
    // The removed script's report keeps its history: the events that carried the field still do.
    const gaugeRows = await rows(gaugeReport.body.data.id);
    expect(gaugeRows).toHaveLength(6);
    const gaugePage = await app.fetch(`/reports/${gaugeReport.body.data.id}`, {
      headers: { cookie: (await app.session("viewer")).cookie },
    });
    expect(await gaugePage.text()).toContain(
      "gauge.level: no approved device of this product declares this field now. Its recorded values are shown as text.",
    );
    expect(gaugeRows.filter((r) => r["gauge.level"] !== null).map((r) => String(r["gauge.level"]))).toEqual([
      "7",
      "7",
    ]);

    // Alerts fire on the rule through all of it.
    await evaluateAlerts(sql, app.config, { settleMs: -5000 });
    const alerts = await sql<{ rule_id: number; status: string }[]>`
      select rule_id, status from alerts where device_id = ${device.id}::uuid`;
    expect(alerts.map((a) => [a.rule_id, a.status])).toEqual([[Number(ruleId), "active"]]);
  });
});
