// Alerts on the agent's real telemetry, over real HTTP and the real job worker (issue 40): the device
// registers with the schema its agent builds, the rule is made over the API from that schema's option
// keys, and the heartbeats are the agent's own. Also: for one option key and one stored event, alert
// evaluation and reports read the same value (the key means one thing to both).
import { afterAll, describe, expect, test } from "bun:test";
import { approvedDevice, json } from "../devices/helpers";
import { ScriptedAgent } from "../helpers/agent-telemetry";
import { startTestApp } from "../helpers/app";
import { openAlerts, sendHeartbeat, sensorDevice, sensorHeartbeat, until } from "./helpers";

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

// Every role in one process: heartbeats wake the evaluation job, as in production.
const app = await startTestApp();
afterAll(() => app.stop());
const sql = app.database.sql;
const operator = { authorization: `Bearer ${await app.token("operator")}` };

async function call(path: string, init: RequestInit = {}) {
  const response = await app.fetch(path, { ...init, headers: { ...operator, ...(init.headers ?? {}) } });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Json };
}

async function createRule(attributes: Record<string, unknown>) {
  return call("/api/json/alert_rules", {
    method: "POST",
    headers: { "content-type": "application/vnd.api+json" },
    body: JSON.stringify({ data: { type: "alert_rule", attributes } }),
  });
}

describe("alerts on the agent's telemetry", () => {
  test("the issue's reproduction: a rule on a field of the agent's schema opens an alert on its heartbeat", async () => {
    const agent = new ScriptedAgent(app.config.dataDir, "p", [
      { name: "mem", schema: { type: "object", properties: { memory_used_percent: { type: "number" } } } },
    ]);
    const device = await approvedDevice(app, { product_name: "p", schema_definition: agent.schema() });
    const rule = await createRule({
      name: "Memory high",
      product_name: "p",
      condition_field: "mem.memory_used_percent",
      operator: ">",
      threshold_value: "50",
    });
    expect(rule.status).toBe(201);
    const body = await agent.heartbeat(device.id, { mem: { memory_used_percent: 85 } });
    expect(body.telemetry.scripts.mem!.data.output).toEqual({ memory_used_percent: 85 });
    await sendHeartbeat(app, device, body);
    const [alert] = await until(async () => {
      const alerts = await openAlerts(sql, device.id);
      return alerts.length > 0 && alerts;
    });
    expect(alert).toMatchObject({ type: "threshold", status: "active", rule_id: Number(rule.body.data.id) });
    expect(alert!.message).toBe("Rule Breach: mem.memory_used_percent > 50");
  });

  test("a rule made from the builder's options on a built-in field fires on the built-in scripts' output", async () => {
    const agent = new ScriptedAgent(app.config.dataDir, "builtin", [], { builtins: true });
    const schema = agent.schema();
    const device = await approvedDevice(app, { product_name: "builtin", schema_definition: schema });
    const options = await call(
      `/api/v1/builder-schemas/builtin/versions/${schema.version}/options?builder=alert`,
    );
    expect(options.status).toBe(200);
    const option = options.body.data.options.find((o: { key: string }) => o.key === "memory.used_pct");
    expect(option).toMatchObject({ key: "memory.used_pct", value_type: "number" });
    const rule = await createRule({
      name: "Any memory use",
      product_name: "builtin",
      condition_field: option.key,
      operator: ">=",
      threshold_value: "0",
    });
    expect(rule.status).toBe(201);
    // The scripts read this machine's /proc: whatever they report, used_pct ≥ 0 holds.
    const body = await agent.heartbeat(device.id, {});
    const used = (body.telemetry.scripts.memory!.data.output as { used_pct: number }).used_pct;
    await sendHeartbeat(app, device, body);
    const alert = await until(async () => {
      const [row] = await sql<{ value: string | null }[]>`
        select value from alerts where device_id = ${device.id}::uuid and type = 'threshold'`;
      return row;
    });
    expect(Number(alert.value)).toBe(used);
  });

  test("for one option key and one heartbeat, the evaluator and a report read the same value", async () => {
    const device = await sensorDevice(app, "agree");
    // Rules that hold for whatever the field holds: the alert records the value the evaluator read.
    const keys = ["sensor.temp", "sensor.state", "sensor.box.fan"];
    for (const [key, operator, threshold_value] of [
      ["sensor.temp", ">", "-1000"],
      ["sensor.state", "is not", "-"],
      ["sensor.box.fan", ">=", "0"],
    ]) {
      const rule = await createRule({
        name: key,
        product_name: "agree",
        condition_field: key,
        operator,
        threshold_value,
      });
      expect(rule.status).toBe(201);
    }
    await sendHeartbeat(
      app,
      device,
      await sensorHeartbeat(device, { temp: 42.5, state: "warm", box: { fan: 3 } }),
    );
    const evaluated = await until(async () => {
      const rows = await sql<{ name: string; value: string }[]>`
        select r.name, a.value from alerts a join alert_rules r on r.id = a.rule_id
        where a.device_id = ${device.id}::uuid order by r.name`;
      return rows.length === keys.length && Object.fromEntries(rows.map((r) => [r.name, r.value]));
    });
    const report = await call("/api/v1/reports", {
      ...json({
        name: "Agreement",
        config: {
          schema_id: null,
          fields: keys.map((path) => ({ path, alias: path })),
          range: { preset: "24h" },
        },
      }),
      headers: operator,
    });
    expect(report.status).toBe(201);
    const results = await call(`/api/v1/reports/${report.body.data.id}/results?mode=raw`);
    expect(results.status).toBe(200);
    const row = results.body.data.rows.find((r: Record<string, unknown>) => r.device_id === device.id);
    // Both read what the script reported.
    expect(keys.map((key) => row[key])).toEqual([42.5, "warm", 3]);
    expect(keys.map((key) => evaluated[key])).toEqual(keys.map((key) => String(row[key])));
  });
});
