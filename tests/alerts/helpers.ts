import type { Sql } from "../../modules/platform/database";
import { approvedDevice, heartbeatUrl, json } from "../devices/helpers";
import type { TestApp } from "../helpers/app";

/** A telemetry schema with a number and a text field (builder options `temp`, `state`, `box.fan`). */
export function sensorSchema(product: string) {
  return {
    product,
    type: "object",
    properties: {
      temp: { type: "number" },
      state: { type: "string" },
      box: { type: "object", properties: { fan: { type: "integer" } } },
    },
  };
}

/** An approved device of `product` that announced sensorSchema(product). */
export async function sensorDevice(app: TestApp, product: string) {
  const schema = sensorSchema(product);
  return approvedDevice(app, { product_name: product, schema_definition: schema });
}

/** A real heartbeat carrying `values` at the top of the telemetry. */
export async function beat(
  app: TestApp,
  device: { id: string; token: string },
  values: Record<string, unknown>,
) {
  const response = await app.fetch(heartbeatUrl(device.id, device.token), json({ telemetry: values }));
  if (response.status !== 200)
    throw new Error(`heartbeat answered ${response.status}: ${await response.text()}`);
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
export async function until<T>(check: () => Promise<T>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error("condition not met in time");
    await Bun.sleep(100);
  }
}
