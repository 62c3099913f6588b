// The agent's heartbeat → charts, gauges and rollups, and the agent's schema → the builder: fed what the
// agent's own code builds (its built-in scripts on this machine's /proc, a custom script with a nested
// field, one that fails). Every field a chart draws is a numeric option of the schema the agent
// announced, read at the path that option key means, and the rollups fold exactly those fields.
import { afterAll, describe, expect, test } from "bun:test";
import { schemaOptionsOf } from "../../modules/builder/service";
import { numericFields } from "../../modules/telemetry/numeric-fields";
import { rollUpTelemetry } from "../../modules/telemetry/rollups";
import { deviceChartData, gaugesOf } from "../../modules/telemetry/series";
import { optionKeyPath, recordTelemetry, valueAt } from "../../modules/telemetry/service";
import { ScriptedAgent, storedPayload } from "../helpers/agent-telemetry";
import { startTestApp } from "../helpers/app";
import { HOUR, MINUTE, rollupReads } from "./rollup-fixtures";

const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());
const sql = app.database.sql;

const agent = new ScriptedAgent(
  app.config.dataDir,
  "fields",
  [
    {
      name: "probe",
      schema: {
        type: "object",
        properties: {
          temp: { type: "number" },
          box: { type: "object", properties: { fan: { type: "integer" } } },
        },
      },
    },
    // Its file is never written: it fails on every collection, as a script with a bad path does.
    { name: "broken", schema: { type: "object", properties: { level: { type: "number" } } } },
  ],
  { builtins: true },
);
const heartbeat = (temp: number) =>
  agent.heartbeat(crypto.randomUUID(), { probe: { temp, box: { fan: 2 } } }).then(storedPayload);

describe("the agent's telemetry in charts, gauges and rollups", () => {
  test("every charted field is a numeric builder option of the agent's schema, at the path its key means", async () => {
    const payload = await heartbeat(21.5);
    const options = new Map(schemaOptionsOf(agent.schema()).map((o) => [o.key, o.value_type]));
    const fields = numericFields(payload);
    expect(fields.map((f) => f.label)).toContain("probe.temp");
    expect(fields.map((f) => f.label)).toContain("probe.box.fan");
    expect(fields.map((f) => f.label)).toContain("memory.used_pct");
    for (const field of fields) {
      // A failed script's report (status, duration_ms) is no field: its key is no option.
      expect({ label: field.label, type: options.get(field.label) }).toMatchObject({
        type: expect.stringMatching(/^(number|integer)$/),
      });
      expect(field.path).toBe(optionKeyPath(field.label).join("."));
      expect(valueAt(payload, optionKeyPath(field.label))).toBe(field.value);
    }
    expect(fields.some((f) => f.label.startsWith("broken."))).toBe(false);
  });

  test("the device page's gauges read the built-in scripts' fields", async () => {
    const payload = await heartbeat(1);
    const gauges = gaugesOf(payload);
    expect(gauges.cpu?.value).toBe(valueAt(payload, optionKeyPath("cpu.usage_pct")) as number);
    expect(gauges.memory?.value).toBe(valueAt(payload, optionKeyPath("memory.used_pct")) as number);
    const disk =
      valueAt(payload, optionKeyPath("disk.root_used_pct")) ??
      valueAt(payload, optionKeyPath("disk.max_used_pct"));
    expect(gauges.disk?.value).toBe(disk as number);
  });

  test("rollups fold the charted fields of the agent's heartbeats; charts read them back", async () => {
    const device = crypto.randomUUID();
    const hour = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
    const payloads = [await heartbeat(10), await heartbeat(30)];
    for (const [i, payload] of payloads.entries())
      await recordTelemetry(sql, device, payload, new Date(hour + (i + 1) * MINUTE));
    await rollUpTelemetry(sql, { now: new Date(hour + 2 * HOUR) });
    const rolled = await rollupReads(sql).hourly(device, hour);
    expect(rolled?.heartbeats).toBe(2);
    const fields = new Set(payloads.flatMap((p) => numericFields(p).map((f) => f.path)));
    expect(new Set(Object.keys(rolled!.stats))).toEqual(fields);
    const temp = optionKeyPath("probe.temp").join(".");
    expect(rolled!.stats[temp]).toEqual([2, 40, 10, 30]);
    const chart = await deviceChartData(
      sql,
      device,
      ["probe.temp"],
      new Date(hour),
      new Date(hour + 3 * HOUR),
      3,
    );
    expect(chart.series[0]!.filter((v) => v !== null)).toEqual([20]);
  });
});
