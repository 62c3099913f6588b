import type { Sql } from "../../modules/platform/database";
import { approvedDevice, heartbeatUrl, json } from "../devices/helpers";
import {
  type AgentHeartbeat,
  ScriptedAgent,
  type ScriptOutputs,
  storedPayload,
} from "../helpers/agent-telemetry";
import type { TestApp } from "../helpers/app";

/**
 * The agent script of the alert tests: a number, a text and a nested integer field (builder options
 * `sensor.temp`, `sensor.state`, `sensor.box.fan`).
 */
export const SENSOR_SCRIPT = {
  name: "sensor",
  schema: {
    type: "object",
    properties: {
      temp: { type: "number" },
      state: { type: "string" },
      box: { type: "object", properties: { fan: { type: "integer" } } },
    },
  },
};

/** An agent of `product` running the sensor script (its files live in the app's data directory). */
export function sensorAgent(app: TestApp, product: string): ScriptedAgent {
  return new ScriptedAgent(app.config.dataDir, product, [SENSOR_SCRIPT]);
}

export interface SensorDevice {
  id: string;
  token: string;
  mac: string;
  agent: ScriptedAgent;
}

/**
 * An approved device of `product` registered with the schema its agent builds (`registration`: more
 * fields of the registration body, such as metadata).
 */
export async function sensorDevice(
  app: TestApp,
  product: string,
  registration: Record<string, unknown> = {},
): Promise<SensorDevice> {
  const agent = sensorAgent(app, product);
  const device = await approvedDevice(app, {
    ...registration,
    product_name: product,
    schema_definition: agent.schema(),
  });
  return { ...device, agent };
}

/** Sends a heartbeat body over HTTP as the agent does; throws unless it was accepted. */
export async function sendHeartbeat(
  app: TestApp,
  device: { id: string; token: string },
  body: AgentHeartbeat,
) {
  const response = await app.fetch(heartbeatUrl(device.id, device.token), json(body));
  if (response.status !== 200)
    throw new Error(`heartbeat answered ${response.status}: ${await response.text()}`);
}

/** The agent's heartbeat when its sensor script reports `values`. */
export function sensorHeartbeat(device: SensorDevice, values: Record<string, unknown>) {
  return device.agent.heartbeat(device.id, { sensor: values } satisfies ScriptOutputs);
}

/** What the server stores for the agent's heartbeat with `values` (for events written with past times). */
export async function sensorPayload(device: SensorDevice, values: Record<string, unknown>) {
  return storedPayload(await sensorHeartbeat(device, values));
}

/** A heartbeat the agent builds and sends when its sensor script reports `values`. */
export async function beat(app: TestApp, device: SensorDevice, values: Record<string, unknown>) {
  await sendHeartbeat(app, device, await sensorHeartbeat(device, values));
}

/** Lets evaluation read events again from `minutes` ago (retried events are skipped by their state). */
export async function rewindCursor(sql: Sql, minutes = 30) {
  await sql`insert into alert_evaluation_cursor (id, recorded_at, event_id)
    values (1, now() - make_interval(mins => ${minutes}), '00000000-0000-0000-0000-000000000000')
    on conflict (id) do update set recorded_at = excluded.recorded_at, event_id = excluded.event_id`;
}

export async function openAlerts(sql: Sql, deviceId: string) {
  return [
    ...(await sql<{ id: string; type: string; status: string; rule_id: number | null; message: string }[]>`
    select id, type, status, rule_id, message from alerts where device_id = ${deviceId}::uuid order by triggered_at`),
  ];
}

/** Polls `check` every 100 ms until it returns a truthy value (bounded: `ms`). */
export async function until<T>(check: () => Promise<T | false | null | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error("condition not met in time");
    await Bun.sleep(100);
  }
}
