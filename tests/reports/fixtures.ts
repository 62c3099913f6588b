import { recordTelemetry } from "../../modules/telemetry/service";
import { approvedDevice } from "../devices/helpers";
import { agentSchema, agentScript } from "../helpers/agent-schema";
import type { TestApp } from "../helpers/app";

// As the agent announces them (a `version` derived from the installed scripts included).
const cpu = agentScript("cpu", 1, { usage_pct: "number" });
export const atomSchema = agentSchema("atom", [cpu, agentScript("host", 1, { name: "string" })]);
const gateSchema = agentSchema("gate", [cpu, agentScript("temp", 1, { celsius: "number" })]);

export function payload(outputs: Record<string, Record<string, unknown>>) {
  const scripts: Record<string, unknown> = {};
  for (const [script, output] of Object.entries(outputs))
    scripts[script] = { data: { status: "success", output } };
  return { device: { hostname: "x" }, scripts, meta: {} };
}

/**
 * Two products: atom (2 devices, cpu.usage_pct + host.name) and gate (1 device, cpu.usage_pct +
 * temp.celsius), 6 events each at 10-minute steps ending 5 minutes before `now`; atom values
 * 10..60 (device a) and 15..65 (device b), gate cpu "12.5" as a numeric string.
 */
export async function seedTwoProducts(app: TestApp, now = new Date()) {
  const a = await approvedDevice(app, { product_name: "atom", schema_definition: atomSchema });
  const b = await approvedDevice(app, { product_name: "atom", schema_definition: atomSchema });
  const g = await approvedDevice(app, { product_name: "gate", schema_definition: gateSchema });
  const sql = app.database.sql;
  for (let i = 0; i < 6; i++) {
    const at = new Date(now.getTime() - (5 + (5 - i) * 10) * 60_000);
    await recordTelemetry(
      sql,
      a.id,
      payload({ cpu: { usage_pct: 10 * (i + 1) }, host: { name: `alpha-${i}` } }),
      at,
    );
    await recordTelemetry(
      sql,
      b.id,
      payload({ cpu: { usage_pct: 10 * (i + 1) + 5 }, host: { name: `=bravo-${i}` } }),
      at,
    );
    await recordTelemetry(sql, g.id, payload({ cpu: { usage_pct: "12.5" }, temp: { celsius: 40 + i } }), at);
  }
  return { a: a.id, b: b.id, g: g.id };
}
