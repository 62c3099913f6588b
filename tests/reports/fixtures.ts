import { recordTelemetry } from "../../modules/telemetry/service";
import { approvedDevice } from "../devices/helpers";
import { ScriptedAgent, type ScriptOutputs, storedPayload } from "../helpers/agent-telemetry";
import type { TestApp } from "../helpers/app";

const cpuScript = { name: "cpu", schema: { type: "object", properties: { usage_pct: { type: "number" } } } };
const atomScripts = [
  cpuScript,
  { name: "host", schema: { type: "object", properties: { name: { type: "string" } } } },
];
const gateScripts = [
  cpuScript,
  { name: "temp", schema: { type: "object", properties: { celsius: { type: "number" } } } },
];

/**
 * Two products whose agents run these scripts: atom (2 devices, cpu.usage_pct + host.name) and gate
 * (1 device, cpu.usage_pct + temp.celsius), 6 heartbeats each at 10-minute steps ending 5 minutes
 * before `now`, stored as the server stores the agents' heartbeats; atom values 10..60 (device a)
 * and 15..65 (device b), gate cpu "12.5" as a numeric string (its script's output then fails the
 * schema's validation: the agent still sends it). `versions`: the schema versions the agents announced.
 */
export async function seedTwoProducts(app: TestApp, now = new Date()) {
  const atom = new ScriptedAgent(app.config.dataDir, "atom", atomScripts);
  const gate = new ScriptedAgent(app.config.dataDir, "gate", gateScripts);
  const a = await approvedDevice(app, { product_name: "atom", schema_definition: atom.schema() });
  const b = await approvedDevice(app, { product_name: "atom", schema_definition: atom.schema() });
  const g = await approvedDevice(app, { product_name: "gate", schema_definition: gate.schema() });
  const sql = app.database.sql;
  const record = async (agent: ScriptedAgent, id: string, outputs: ScriptOutputs, at: Date) =>
    recordTelemetry(sql, id, storedPayload(await agent.heartbeat(id, outputs)), at);
  for (let i = 0; i < 6; i++) {
    const at = new Date(now.getTime() - (5 + (5 - i) * 10) * 60_000);
    await record(atom, a.id, { cpu: { usage_pct: 10 * (i + 1) }, host: { name: `alpha-${i}` } }, at);
    await record(atom, b.id, { cpu: { usage_pct: 10 * (i + 1) + 5 }, host: { name: `=bravo-${i}` } }, at);
    await record(gate, g.id, { cpu: { usage_pct: "12.5" }, temp: { celsius: 40 + i } }, at);
  }
  return { a: a.id, b: b.id, g: g.id, versions: { atom: atom.schema().version, gate: gate.schema().version } };
}
