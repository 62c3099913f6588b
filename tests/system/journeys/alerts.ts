// Journeys 2 (a rule from the builder fires on real telemetry, notifies, is acknowledged and
// resolves) and 8 (offline: its two halves run apart, the offline minute passing between them).
import { expect } from "bun:test";
import { createHmac, timingSafeEqual } from "node:crypto";
import { waitFor } from "../../terminal/helpers";
import type { Step, World } from "../world";

/** 2: rule from the builder's options on a built-in field → alert in 10 s → email, signed webhook → acknowledge → auto-resolve. */
export async function alert(w: World, step: Step) {
  const { fleet, page, ids, at } = w;
  // uptime.uptime_s (the built-in `uptime` script) below a bound 25 s ahead of now: true on A's
  // next heartbeat, false about 25 s later as the device's own clock moves on.
  const uptime = Number((await Bun.file("/proc/uptime").text()).split(" ")[0]);
  const bound = String(Math.round(uptime + 25));
  const form = "#rule-form";
  const ruleCreated = await step("rule_from_builder", async () => {
    await page.goto(at("/alerts/new"));
    await page.fill(`${form} input[name="name"]`, "System uptime bound");
    // Each choice re-renders the form (htmx) with the next list; a re-render still in flight can
    // undo a later choice, so each is made again until the list it unlocks is there.
    const choose = async (name: string, value: () => Promise<string>, unlocks: string) => {
      for (let attempt = 1; ; attempt++) {
        await page.selectOption(`${form} select[name="${name}"]`, await value());
        const shown = await page
          .locator(`${form} ${unlocks}`)
          .first()
          .waitFor({ state: "attached", timeout: 3_000 })
          .then(
            () => true,
            () => false,
          );
        if (shown) return;
        if (attempt === 5) throw new Error(`choosing ${name} never offered ${unlocks}`);
      }
    };
    // A rule is about a product's fields (docs/alerts.md): choosing the product offers them.
    await choose(
      "product_name",
      async () => "outpost-linux",
      `select[name="condition_field"] option[value="uptime.uptime_s"]`,
    );
    await choose(
      "condition_field",
      async () => "uptime.uptime_s",
      `select[name="operator"] option[value="<"]`,
    );
    await page.selectOption(`${form} select[name="operator"]`, "<");
    await page.fill(`${form} input[name="threshold_value"]`, bound);
    await page.fill(`${form} input[name="resolve_after_minutes"]`, "0");
    await page.selectOption(`${form} select[name="severity"]`, "critical");
    await page.selectOption(`${form} select[name="scope_type"]`, "devices");
    await page.fill(`${form} input[name="device_ids"]`, ids.A);
    await page.fill(`${form} input[name="recipients"]`, "oncall@system.test");
    await Promise.all([
      page.waitForURL((url) => url.pathname !== "/alerts/new" && url.pathname !== "/alerts/rules"),
      page.click(`${form} button[type="submit"]`),
    ]);
    const [rule] = await fleet.sql<
      { id: number }[]
    >`select id from alert_rules where name = 'System uptime bound'`;
    expect(rule).toBeDefined();
    return Date.now();
  });
  const alertId = await step("alert_fires", async () => {
    const found = await waitFor(
      async () => {
        const [alert] = await fleet.sql<{ id: string }[]>`
              select a.id from alerts a join alert_rules r on r.id = a.rule_id
              where r.name = 'System uptime bound' and a.device_id = ${ids.A}`;
        return alert?.id;
      },
      10_000,
      "the alert within 10 s of the rule's creation",
    );
    expect(Date.now() - ruleCreated).toBeLessThan(10_000);
    await page.goto(at(`/alerts/${found}`));
    expect(await page.textContent("main")).toContain("Rule Breach: uptime.uptime_s < ");
    return found;
  });
  await step("email_arrives", async () => {
    const mail = await waitFor(
      () =>
        fleet.smtp.mails.find((m) => m.to.includes("oncall@system.test") && m.raw.includes("Rule Breach")),
      15_000,
      "the alert email at the SMTP receiver",
    );
    expect(mail.to).toContain("ops@system.test");
  });
  await step("webhook_verifies", async () => {
    const hook = await waitFor(
      () => fleet.hook.received.find((r) => r.body.includes(alertId)),
      15_000,
      "the alert webhook at the receiver",
    );
    // An independent check of the signature (docs/alerts.md): HMAC-SHA256 of "<t>.<body>".
    const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(hook.signature ?? "");
    expect(match).not.toBeNull();
    const expected = createHmac("sha256", w.webhookSecret).update(`${match![1]}.${hook.body}`).digest("hex");
    expect(timingSafeEqual(Buffer.from(expected), Buffer.from(match![2]!))).toBe(true);
    expect(Math.abs(Date.now() / 1000 - Number(match![1]))).toBeLessThan(120);
    const body = JSON.parse(hook.body) as { id: string; status: string; device: { id: string } };
    expect(body).toMatchObject({ id: alertId, status: "active", device: { id: ids.A } });
  });
  await step("acknowledge", async () => {
    await page.goto(at(`/alerts/${alertId}`));
    await page.fill('input[name="note"]', "looking");
    await Promise.all([
      page.waitForLoadState("load"),
      page.click('button[name="action"][value="acknowledge"]'),
    ]);
    await waitFor(
      async () => {
        const [alert] = await fleet.sql<
          { status: string }[]
        >`select status from alerts where id = ${alertId}`;
        return alert?.status === "acknowledged";
      },
      10_000,
      "the alert acknowledged",
    );
  });
  await step("auto_resolves", async () => {
    await waitFor(
      async () => {
        const [alert] = await fleet.sql<
          { status: string }[]
        >`select status from alerts where id = ${alertId}`;
        return alert?.status === "resolved";
      },
      45_000,
      "the alert to resolve once A's uptime passed the bound",
    );
  });
}

/** 8, first half: stop agent C; the time it stopped. */
export async function offlineStop(w: World, step: Step): Promise<number> {
  let stoppedAt = 0;
  await step("stop_agent", async () => {
    await w.agents.C.stop();
    stoppedAt = Date.now();
  });
  return stoppedAt;
}

/** 8, second half: the offline alert after the 1-minute window; C started again; the alert resolves. */
export async function offlineResolve(w: World, step: Step, stoppedAt: number) {
  const { fleet, page, agents, ids, at } = w;
  const alertId = await step("offline_alert", async () => {
    // The window is 1 minute since C's last heartbeat; alerts_offline runs every minute (cron).
    await Bun.sleep(Math.max(0, 61_000 - (Date.now() - stoppedAt)));
    return waitFor(
      async () => {
        const [alert] = await fleet.sql<{ id: string }[]>`
              select id from alerts where device_id = ${ids.C} and type = 'offline' and status = 'active'`;
        return alert?.id;
      },
      75_000,
      "an offline alert for C",
    );
  });
  await step("start_agent", async () => {
    await page.goto(at(`/alerts/${alertId}`));
    expect(await page.textContent("main")).toContain("hasn't reported");
    agents.C.start();
  });
  await step("resolved", async () => {
    await waitFor(
      async () => {
        const [alert] = await fleet.sql<
          { status: string }[]
        >`select status from alerts where id = ${alertId}`;
        return alert?.status === "resolved";
      },
      20_000,
      "the offline alert resolved by C's heartbeat",
    );
  });
}
