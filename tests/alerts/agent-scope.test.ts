// A view-scoped rule on an agent's own output (docs/testing.md, producer → consumer pairs): the agent
// registers with the labels of its configuration (its config loader and registration code), a saved
// view selects them (`tag:rack=r7`), and the heartbeats its sandbox builds reach the rule over HTTP
// through the real job worker. A device of the rule's own product outside the view stays quiet.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../../agent/config.ts";
import { registerOnce } from "../../agent/register.ts";
import { approveDevices } from "../../modules/devices/service";
import { pollerContext } from "../agent/helpers";
import { json } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { tempDir } from "../helpers/temp";
import { openAlerts, sendHeartbeat, sensorAgent, sensorDevice, sensorHeartbeat, until } from "./helpers";

// Every role in one process: heartbeats wake the evaluation job, as in production.
const app = await startTestApp();
afterAll(() => app.stop());
const sql = app.database.sql;
const operator = { authorization: `Bearer ${await app.token("operator")}` };
const api = (pathname: string, body: unknown) =>
  app.fetch(pathname, { ...json(body), headers: { ...operator, "content-type": "application/json" } });

describe("a view-scoped rule on the agent's telemetry", () => {
  test("fires for the agent whose labels put it in the view, not for a device outside it", async () => {
    // The agent, configured as an operator writes it: its labels go out with its registration.
    const dir = tempDir("outpost-agent-scope-");
    const file = path.join(dir, "agent.yaml");
    writeFileSync(
      file,
      `server_url: ${app.url}\nstate_dir: ${dir}/state\nproduct_name: rack-gw\nlabels:\n  rack: r7\n`,
    );
    const ctx = pollerContext(loadConfig({ file, env: {}, systemFile: path.join(dir, "none.yaml") }).config);
    expect(await registerOnce(ctx, null)).toBeNull(); // pending
    const [{ id }] = await sql<{ id: string }[]>`select id from devices where product_name = 'rack-gw'`;
    await approveDevices(sql, [id]);
    const creds = await registerOnce(ctx, id); // approved: the agent proves its identity for its token
    expect(creds?.uuid).toBe(id);

    // The rule's product (whose schema offers the field) and a device of it outside the view.
    const outside = await sensorDevice(app, "rack-schema");
    expect((await api("/api/v1/views", { name: "Rack 7", query: "tag:rack=r7" })).status).toBe(201);
    const rule = await app.fetch("/api/json/alert_rules", {
      method: "POST",
      headers: { ...operator, "content-type": "application/vnd.api+json" },
      body: JSON.stringify({
        data: {
          type: "alert_rule",
          attributes: {
            name: "Rack 7 hot",
            product_name: "rack-schema",
            condition_field: "sensor.temp",
            operator: ">",
            threshold_value: "75",
            scope_type: "view",
            scope_view: "Rack 7",
          },
        },
      }),
    });
    expect(rule.status).toBe(201);
    const ruleId = Number(((await rule.json()) as { data: { id: string } }).data.id);

    // Both send what the sensor script reports through the agent's sandbox, 90 °C: the outside one first.
    const agent = sensorAgent(app, "rack-gw");
    await sendHeartbeat(app, outside, await sensorHeartbeat(outside, { temp: 90 }));
    await sendHeartbeat(
      app,
      { id, token: creds!.token },
      await agent.heartbeat(id, { sensor: { temp: 90 } }),
    );
    const [alert] = await until(async () => {
      const alerts = await openAlerts(sql, id);
      return alerts.length > 0 && alerts;
    });
    expect(alert).toMatchObject({ type: "threshold", status: "active", rule_id: ruleId });
    // The evaluator reads in arrival order: the outside device's earlier heartbeat was read too.
    expect(await openAlerts(sql, outside.id)).toEqual([]);
  });
});
