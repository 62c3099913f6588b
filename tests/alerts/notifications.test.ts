import { afterAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { Value } from "@sinclair/typebox/value";
import { evaluateAlerts } from "../../modules/alerts/evaluation";
import { WebhookBody } from "../../modules/alerts/model";
import { deliverNotification } from "../../modules/alerts/notifications/deliver";
import { postWebhook, type WebhookTransport } from "../../modules/alerts/notifications/webhook";
import { createRule } from "../../modules/alerts/rules";
import { loadConfig } from "../../modules/platform/config";
import { saveNotificationSettings } from "../../modules/settings/store";
import { startTestApp } from "../helpers/app";
import { beat, sensorDevice } from "./helpers";
import { startHttpsReceiver, startSmtp } from "./receivers";

// A real SMTP server and a real HTTPS receiver (self-signed certificate for hooks.test, which the
// test resolver maps to 127.0.0.1; loopback is allowed only by the documented test switch).
const smtpServer = await startSmtp();
const mails = smtpServer.mails;
const smtpPort = smtpServer.port;
const hook = startHttpsReceiver();
const { cert, received, answers } = hook;
const receiver = { port: hook.port };

const webhook: WebhookTransport = { resolve: async () => ["127.0.0.1"], ca: cert };
const app = await startTestApp(
  {
    OUTPOST_ROLE: "web",
    SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    SMTP_FROM: "Outpost <alerts@outpost.test>",
    ALERT_WEBHOOK_ALLOW_LOOPBACK_FOR_TESTS: "true",
  },
  { webhook },
);
afterAll(async () => {
  await app.stop();
  hook.stop();
  await smtpServer.stop();
});
const sql = app.database.sql;
const hookUrl = `https://hooks.test:${receiver.port}/outpost`;

// Saved as Settings saves it. Settings refuses loopback URLs (correctly): its check resolves the
// receiver's name to a public address here, while delivery resolves it to the receiver (`webhook` above).
await saveNotificationSettings(
  sql,
  { notification_email: "ops@example.test, oncall@example.test", webhook_url: hookUrl },
  undefined,
  async () => ["93.184.216.34"],
);

const admin = await app.session("admin");
const form = (fields: Record<string, string>) => ({
  method: "POST",
  headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams({ _csrf: admin.csrf, ...fields }),
});
const secretPage = await (await app.fetch("/settings/notifications/webhook-secret", form({}))).text();
const secret = /id="webhook-secret"[^>]*>(whsec_[\w-]+)</.exec(secretPage)?.[1];

const pending = () => sql<{ id: string; channel: string; event: string; status: string }[]>`
  select id, channel, event, status from alert_notifications where status = 'pending' order by created_at, channel`;

function verify(signature: string | null, body: string) {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature ?? "");
  if (!match) return false;
  return createHmac("sha256", secret!).update(`${match[1]}.${body}`).digest("hex") === match[2];
}

describe("notifications", () => {
  test("an alert emails every recipient and posts a signed webhook; a 500 is retried and the attempts are recorded", async () => {
    expect(secret).toBeDefined();
    const device = await sensorDevice(app, "notify-prod");
    await createRule(sql, {
      name: "Notify hot",
      product_name: "notify-prod",
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "50",
      resolve_after_minutes: 0,
      severity: "critical",
      recipients: ["rule@example.test"],
    });
    await beat(app, device, { temp: 77 });
    await evaluateAlerts(sql, app.config, { settleMs: -5000 });
    const queued = await pending();
    expect(queued.map((n) => `${n.channel}:${n.event}`)).toEqual(["email:trigger", "webhook:trigger"]);
    const jobs =
      await sql`select max_attempts from graphile_worker.jobs where task_identifier = 'alerts_notify'`;
    expect(jobs.map((j) => j.max_attempts)).toEqual([25, 25]);

    expect(await deliverNotification(sql, app.config, queued[0]!.id, webhook)).toBe("sent");
    expect(mails).toHaveLength(1);
    expect(mails[0]!.to.sort()).toEqual(["oncall@example.test", "ops@example.test", "rule@example.test"]);
    expect(mails[0]!.raw).toContain("Subject: [critical] Rule Breach: sensor.temp > 50 on");
    expect(mails[0]!.raw).toContain("/alerts/");

    answers.push(500);
    await expect(deliverNotification(sql, app.config, queued[1]!.id, webhook)).rejects.toThrow(
      "the receiver answered 500",
    );
    const [failed] =
      await sql`select status, attempts, last_error from alert_notifications where id = ${queued[1]!.id}::uuid`;
    expect(failed).toMatchObject({ status: "pending", attempts: 1, last_error: "the receiver answered 500" });
    expect(await deliverNotification(sql, app.config, queued[1]!.id, webhook)).toBe("sent");
    expect(received).toHaveLength(2);
    const last = received[1]!;
    expect(last.host).toBe(`hooks.test:${receiver.port}`);
    expect(verify(last.signature, last.body)).toBe(true);
    expect(verify(last.signature, `${last.body} `)).toBe(false);
    const body = JSON.parse(last.body);
    expect(Value.Check(WebhookBody, body)).toBe(true);
    expect(body).toMatchObject({
      type: "threshold",
      severity: "critical",
      status: "active",
      device: { id: device.id, mac_address: device.mac },
      rule: { name: "Notify hot" },
    });

    const page = await (await app.fetch(`/alerts/${body.id}`, { headers: { cookie: admin.cookie } })).text();
    // The alert page lists each notification with its attempts (the webhook needed two).
    const rows = page.split("<tr>").filter((r) => r.includes("trigger"));
    expect(
      rows.map((r) => [r.includes(">email<") ? "email" : "webhook", />(\d+)<\/td>/.exec(r)?.[1]]),
    ).toEqual([
      ["email", "1"],
      ["webhook", "2"],
    ]);

    // Resolve sends again; a new breach within the flap interval is suppressed.
    await beat(app, device, { temp: 10 });
    await evaluateAlerts(sql, app.config, { settleMs: -5000 });
    expect((await pending()).map((n) => `${n.channel}:${n.event}`)).toEqual([
      "email:resolve",
      "webhook:resolve",
    ]);
    await sql`update alert_notifications set status = 'sent' where status = 'pending'`;
    await beat(app, device, { temp: 90 });
    await evaluateAlerts(sql, app.config, { settleMs: -5000 });
    const latest = await sql`select n.status from alert_notifications n join alerts a on a.id = n.alert_id
      where a.status = 'active' and a.device_id = ${device.id}::uuid`;
    expect(latest.map((r) => r.status)).toEqual(["suppressed", "suppressed"]);
  });

  test("loopback receivers are refused unless the test switch is on (off by default)", async () => {
    const production = loadConfig({
      ...process.env,
      DATABASE_URL: app.database.url,
      SECRET_KEY: app.config.secretKey,
    });
    expect(production.alertWebhookAllowLoopback).toBe(false);
    const result = await postWebhook(production, hookUrl, "{}", "s", webhook);
    expect(result).toEqual({ ok: false, error: "hooks.test resolves to a private or reserved address" });
    expect(await postWebhook(production, "http://example.com/x", "{}", null, webhook)).toMatchObject({
      ok: false,
    });
    // With the switch on: a redirect is not followed, it counts as a failure.
    answers.push(302);
    expect(await postWebhook(app.config, hookUrl, "{}", "s", webhook)).toEqual({
      ok: false,
      error: "the receiver answered 302",
    });
  });

  test("Settings: Send test notification reaches both channels", async () => {
    const before = received.length;
    const response = await app.fetch("/settings/notifications/test", form({}));
    expect(response.status).toBe(303);
    expect(received.length).toBe(before + 1);
    expect(JSON.parse(received[before]!.body)).toMatchObject({
      type: "test",
      message: "Test notification from Outpost",
    });
    expect(verify(received[before]!.signature, received[before]!.body)).toBe(true);
    expect(mails.at(-1)!.raw).toContain("Test notification from Outpost");
    const viewer = await app.session("viewer");
    const denied = await app.fetch("/settings/notifications/test", {
      method: "POST",
      headers: { cookie: viewer.cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: viewer.csrf }),
    });
    expect(denied.status).toBe(403);
  });
});

/** The decoded text/plain part of a raw message as the SMTP server received it. */
function plainText(raw: string): string {
  const part = /Content-Type: text\/plain[^\r\n]*\r\n(?:[^\r\n]+\r\n)*?\r\n([\s\S]*?)\r\n--/i.exec(raw);
  const encoding = /Content-Type: text\/plain[\s\S]*?Content-Transfer-Encoding: ([\w-]+)/i.exec(raw)?.[1];
  const body = part?.[1] ?? "";
  if (encoding?.toLowerCase() === "base64") return Buffer.from(body, "base64").toString("utf8");
  if (encoding?.toLowerCase() !== "quoted-printable") return body;
  const bytes = body
    .replace(/=\r\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  return Buffer.from(bytes, "latin1").toString("utf8");
}

describe("device text in emails", () => {
  test("a device's name and a rule name with line breaks stay one quoted line, marked as the device's", async () => {
    const product = "inject-prod";
    const name = "pump\r\nBcc: nm@evil.test\r\n\r\nYour password expired\u202e";
    const device = await sensorDevice(app, product, { metadata: { name } });
    await createRule(sql, {
      name: "Hot\nBcc: rule@evil.test",
      product_name: product,
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "50",
      resolve_after_minutes: 0,
      severity: "warning",
      recipients: [],
    });
    await beat(app, device, { temp: 99 });
    await evaluateAlerts(sql, app.config, { settleMs: -5000 });
    const email = (await pending()).find((n) => n.channel === "email")!;
    const before = mails.length;
    expect(await deliverNotification(sql, app.config, email.id, webhook)).toBe("sent");
    const mail = mails[before]!;
    expect(mail.to.sort()).toEqual(["oncall@example.test", "ops@example.test"]);
    const text = plainText(mail.raw);
    const lines = text.split(/\r?\n/);
    expect(lines.filter((l) => /^\s*Bcc:/i.test(l))).toEqual([]);
    expect(lines).toContain(
      'Device: "pump\\r\\nBcc: nm@evil.test\\r\\n\\r\\nYour password expired\\u202e" (name reported by the device)',
    );
    expect(lines).toContain('Product: "inject-prod" (reported by the device)');
    expect(lines).toContain('Rule: "Hot\\nBcc: rule@evil.test"');
    expect(lines).not.toContain("Your password expired");
    // The headers too: one Subject, no Bcc anywhere.
    const head = mail.raw.split("\r\n\r\n")[0]!;
    expect(head).not.toMatch(/^bcc:/im);
    await sql`update alert_notifications set status = 'sent' where status = 'pending'`;
  });
});
