// The whole path through the real job worker: heartbeat → alerts_evaluate → alerts_notify → a webhook
// receiver that answers 500 once; graphile-worker retries with backoff and the second attempt lands.
import { afterAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { createRule } from "../../modules/alerts/rules";
import { rotateWebhookSecret, saveNotificationSettings } from "../../modules/settings/store";
import { startTestApp } from "../helpers/app";
import { beat, sensorDevice, until } from "./helpers";
import { startHttpsReceiver } from "./receivers";

const hook = startHttpsReceiver();
const app = await startTestApp(
  { ALERT_WEBHOOK_ALLOW_LOOPBACK_FOR_TESTS: "true" },
  { webhook: { resolve: async () => ["127.0.0.1"], ca: hook.cert } },
);
afterAll(async () => {
  await app.stop();
  hook.stop();
});
const sql = app.database.sql;

describe("delivery through the worker", () => {
  test("a breach reaches the webhook within seconds; a 500 is retried by the queue", async () => {
    await saveNotificationSettings(sql, {});
    await sql`update system_settings set value = jsonb_set(value, '{webhook_url}', to_jsonb(${hook.url}::text)) where key = 'notifications'`;
    const secret = await rotateWebhookSecret(sql);
    const device = await sensorDevice(app, "worker-prod");
    await createRule(sql, {
      name: "Worker hot",
      product_name: "worker-prod",
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "50",
    });
    hook.answers.push(500);
    const sent = Date.now();
    await beat(app, device, { temp: 80 });
    await until(async () => hook.received.length >= 2, 30_000);
    const [first, second] = hook.received;
    expect(first!.at - sent).toBeLessThan(10_000); // evaluation + first attempt
    expect(second!.at - first!.at).toBeGreaterThan(1000); // graphile-worker's backoff
    const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(second!.signature ?? "")!;
    expect(createHmac("sha256", secret).update(`${match[1]}.${second!.body}`).digest("hex")).toBe(match[2]);
    const row = await until(async () => {
      const [sentRow] =
        await sql`select status, attempts, last_error from alert_notifications where status = 'sent'`;
      return sentRow;
    });
    expect(row).toMatchObject({ status: "sent", attempts: 2, last_error: null });
  }, 60_000);
});
