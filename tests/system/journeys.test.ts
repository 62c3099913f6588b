// The system journeys (issue 40; docs/testing.md "System journeys"): Outpost deployed as separate
// processes behind Caddy, three real compiled agents installed by the console's one-liner, operator
// steps in Chromium, each journey reported to the E2E run API of the Outpost under test.
// Journeys share the fleet and run in order; each step's waits are bounded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac, timingSafeEqual } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { agentBinary } from "../helpers/agent-binary";
import { LAPTOP, launchBrowser } from "../helpers/browser";
import { REPO } from "../helpers/process";
import { waitFor } from "../terminal/helpers";
import { untilScreen } from "../terminal/screen";
import { type Agent, deviceInterfaces, installAgent } from "./agents";
import { startSystemRun } from "./e2e-run";
import { ADMIN, DEVICE_DOMAIN, DOMAIN, type Fleet, startFleet } from "./fleet";

// At the top level, as every test file starts its servers: helpers register their afterAll here.
// This hook comes first (hooks run in order), so the run is finished while Outpost still runs.
const finish: { run?: () => Promise<void> } = {};
afterAll(() => finish.run?.());
await agentBinary("x64");
const fleet: Fleet = await startFleet();
const browser = await launchBrowser([
  `--host-resolver-rules=MAP *.${DOMAIN} 127.0.0.1`,
  "--ignore-certificate-errors",
]);
const context: BrowserContext = await browser.newContext({ viewport: LAPTOP, ignoreHTTPSErrors: true });
const page: Page = await context.newPage();
const run = await startSystemRun(fleet.agentUrl);
/** The three devices: A (remote access, terminal, alert, faults), B (custom script, revoke), C (offline). */
const agents: Record<"A" | "B" | "C", Agent> = {} as never;
const ids: Record<"A" | "B" | "C", string> = {} as never;
let webhookSecret = "";

finish.run = async () => {
  // What every process and agent said, for a failure's post-mortem (CI keeps artifacts/).
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const [role, child] of Object.entries(fleet.processes))
    writeFileSync(
      path.join(ARTIFACTS, `${role}.log`),
      `${child.output()}\n[exit ${child.process.exitCode ?? child.process.signalCode ?? "running"}]\n`,
    );
  for (const agent of Object.values(agents))
    writeFileSync(path.join(ARTIFACTS, `agent-${agent.name}.log`), agent.log());
  await run.finish();
  const times = run.records.map((r) => `${r.id} ${r.status} ${(r.durationMs / 1000).toFixed(1)} s`);
  console.log(`system journeys (run ${run.runId}, ${await run.status()}):\n  ${times.join("\n  ")}`);
};

beforeAll(async () => {
  await page.goto(`${fleet.consoleUrl}/login`);
  await page.fill('input[name="email"]', ADMIN.email);
  await page.fill('input[name="password"]', ADMIN.password);
  await Promise.all([
    page.waitForURL((url) => url.pathname !== "/login"),
    page.click('button[type="submit"]'),
  ]);
  // The admin's settings for the alert journeys, in the console: offline after 1 minute, the email
  // recipient, a webhook signing secret. The webhook URL is written directly: Settings refuses a
  // loopback receiver (rightly), and the receiver is on this machine.
  await page.goto(at("/settings#monitoring"));
  await page.fill('#monitoring input[name="offline_alert_minutes"]', "1");
  await page.click('#monitoring form[action="/settings/monitoring"] button[type="submit"]');
  await page.locator("text=Monitoring settings saved.").waitFor({ timeout: 10_000 });
  await page.fill('#notifications input[name="notification_email"]', "ops@system.test");
  await page.click('#notifications form[action="/settings/notifications"] button[type="submit"]');
  await page.locator("text=Notification settings saved.").waitFor({ timeout: 10_000 });
  await fleet.sql`update system_settings set value = jsonb_set(value, '{webhook_url}', to_jsonb(${fleet.hook.url.replace("hooks.test", "127.0.0.1")}::text)) where key = 'notifications'`;
  page.once("dialog", (dialog) => void dialog.accept());
  await page.click('form[action="/settings/notifications/webhook-secret"] button');
  webhookSecret = (await page.textContent("#webhook-secret", { timeout: 10_000 }))?.trim() ?? "";
  expect(webhookSecret).toMatch(/^whsec_/);
}, 60_000);

/** Whether the tunnel process holds a tunnel of the device now. */
async function tunnelUp(deviceId: string) {
  return (await fleet.sql`select 1 from tunnel_connections where device_id = ${deviceId}`).length > 0;
}

/** A console page of its own for a device (opening it opens a remote-access lease). */
async function devicePage(deviceId: string, tab = "remote") {
  const opened = await context.newPage();
  await opened.goto(at(devicePath(deviceId, tab)));
  return opened;
}

/** The status Chromium gets for `url` in a page of its own (its resolver maps *.system.test to Caddy). */
async function statusInBrowser(url: string) {
  const tab = await context.newPage();
  try {
    return (await tab.goto(url, { timeout: 10_000 }))?.status();
  } finally {
    await tab.close();
  }
}

/** Posts `pathname` from the console page as its own scripts do (CSRF token of the page); the status. */
function postFromPage(on: Page, pathname: string) {
  return on.evaluate(async (target) => {
    const csrf = (document.querySelector('input[name="_csrf"]') as HTMLInputElement | null)?.value ?? "";
    const response = await fetch(target, {
      method: "POST",
      headers: { "x-csrf-token": csrf, accept: "application/json" },
    });
    return { status: response.status, body: await response.text() };
  }, pathname);
}

/** The custom script journey 3 installs: a field the builder learns from its schema. */
const PROBE_SCRIPT = `/*---
name: system_probe
version: 1
description: The system suite's custom script.
schema:
  type: object
  required: [answer]
  properties:
    answer: { type: number }
---*/
function main() {
  return { answer: 6 * 7 };
}
`;
const ARTIFACTS = path.join(REPO, "artifacts/system");

/** Where the console shows `deviceId`, as a path. */
const devicePath = (deviceId: string, tab?: string) => `/devices/${deviceId}${tab ? `?tab=${tab}` : ""}`;
const at = (pathname: string) => `${fleet.consoleUrl}${pathname}`;

describe("system journeys", () => {
  test("1 enrol: token → one-liner → registered → telemetry on the device page within 10 s", async () => {
    await run.journey("system_enrol", async (step) => {
      const installLine = await step("enrolment_token", async () => {
        await page.goto(at("/settings#enrolment-tokens"));
        await page.fill('#enrolment-tokens input[name="name"]', "system fleet");
        await page.check('#enrolment-tokens input[name="approve"]');
        await page.click('#enrolment-tokens button:has-text("Create enrolment token")');
        const line = (await page.textContent("#install-line", { timeout: 10_000 }))?.trim() ?? "";
        expect(line).toMatch(
          /^curl -fsSL https:\/\/console\.system\.test:\d+\/install\.sh \| sudo sh -s -- --token \S+$/,
        );
        return line;
      });
      const interfaces = deviceInterfaces(3);
      await step("one_liner", async () => {
        const installed = await Promise.all(
          (["A", "B", "C"] as const).map((name, i) => installAgent(fleet, installLine, name, interfaces[i]!)),
        );
        for (const agent of installed) {
          expect(agent.installOutput).toContain("(SHA-256 verified)");
          expect(agent.installOutput).toContain("Registered as");
          agents[agent.name as "A" | "B" | "C"] = agent;
        }
      });
      await step("registered", async () => {
        for (const [i, name] of (["A", "B", "C"] as const).entries()) {
          const mac = (await Bun.file(`/sys/class/net/${interfaces[i]}/address`).text()).trim().toLowerCase();
          const [device] = await fleet.sql<{ id: string; approval_status: string }[]>`
            select id, approval_status from devices where lower(mac_address) = ${mac}`;
          expect(device?.approval_status).toBe("approved");
          ids[name] = device!.id;
        }
        expect(new Set(Object.values(ids)).size).toBe(3);
      });
      await step("telemetry_on_device_page", async () => {
        // One at a time: three agents warming up at once on two shared cores is not what a device sees.
        for (const name of ["A", "B", "C"] as const) {
          const started = Date.now();
          agents[name].start();
          await waitFor(
            async () => {
              await page.goto(at(devicePath(ids[name], "overview")));
              const label = await page.getAttribute('.gauges svg[aria-label^="Memory"]', "aria-label");
              return label && /^Memory: \d/.test(label);
            },
            10_000,
            `device ${name}'s memory figure on its page within 10 s of the agent starting`,
          );
          expect(Date.now() - started).toBeLessThan(10_000);
        }
      });
    });
  }, 180_000);

  test("4 remote access: Open web UI through Caddy shows the device's page; closing the device page ends access (403 after the grace)", async () => {
    await run.journey("system_remote_access", async (step) => {
      await page.goto(at("/alerts")); // no other console page of A holds a lease
      const remote = await step("open_device_page", async () => {
        const opened = await devicePage(ids.A);
        await opened.locator("[data-remote-panel]").waitFor({ timeout: 10_000 });
        await opened.locator("text=Connected").waitFor({ timeout: 15_000 });
        return opened;
      });
      const deviceUi = await step("open_web_ui", async () => {
        const [popup] = await Promise.all([
          remote.waitForEvent("popup"),
          remote.locator("[data-open-web-ui]").click(),
        ]);
        await popup.locator("h1", { hasText: "device A" }).waitFor({ timeout: 15_000 });
        return popup;
      });
      const deviceUrl = await step("device_page_through_caddy", async () => {
        const url = new URL(deviceUi.url());
        expect(url.protocol).toBe("https:");
        expect(url.hostname).toBe(`dev-${ids.A.replaceAll("-", "")}.${DEVICE_DOMAIN}`);
        expect(url.port).toBe(String(fleet.httpsPort));
        expect(agents.A.web.seen).toContain("GET /");
        // A reload through Caddy with the access cookie still reaches the device.
        expect(await statusInBrowser(`${url.origin}/again`)).toBe(200);
        expect(agents.A.web.seen).toContain("GET /again");
        return url.origin;
      });
      await step("close_page", async () => {
        await deviceUi.close();
        await remote.close({ runBeforeUnload: true });
      });
      await step("refused_after_grace", async () => {
        await waitFor(
          async () => (await statusInBrowser(`${deviceUrl}/after`)) === 403,
          15_000,
          "403 from the device host after the page closed and the 1 s grace",
        );
        await waitFor(async () => !(await tunnelUp(ids.A)), 15_000, "A's tunnel down");
      });
    });
  }, 120_000);

  test("5 terminal: echo $((6*7)) shows 42; the recording plays and holds 42", async () => {
    await run.journey("system_terminal", async (step) => {
      const terminal = await step("open_terminal", async () => {
        const opened = await devicePage(ids.A, "terminal");
        await opened.click("[data-terminal-start]");
        await opened.waitForSelector('#terminal[data-state="connected"]', { timeout: 30_000 });
        await opened.click("[data-terminal-screen]");
        return opened;
      });
      await step("echo_42", async () => {
        await terminal.keyboard.type("echo $((6*7))");
        await terminal.keyboard.press("Enter");
        await untilScreen(terminal, (lines) => lines.includes("42"), "42 on the terminal");
      });
      const sessionId = await step("end_session", async () => {
        await terminal.click("[data-terminal-end]");
        await terminal.waitForSelector('#terminal[data-state="ended"]', { timeout: 15_000 });
        const [session] = await fleet.sql<{ id: string; end_reason: string }[]>`
          select id, end_reason from terminal_sessions where device_id = ${ids.A} order by created_at desc limit 1`;
        expect(session?.end_reason).toBe("closed");
        await terminal.close();
        return session!.id;
      });
      await step("recording_holds_42", async () => {
        await page.goto(at(`/terminal/sessions/${sessionId}`));
        await page.waitForSelector('#player[data-loaded="1"]', { timeout: 15_000 });
        await page.evaluate(() => {
          const root = document.getElementById("player") as HTMLElement & {
            player: { seekTo(s: number): void; duration(): number };
          };
          root.player.seekTo(root.player.duration());
        });
        await untilScreen(page, (lines) => lines.includes("42"), "42 in the playback", "#player");
      });
    });
  }, 120_000);

  test("6 revoke: the token is refused, the tunnel closes, a terminal cannot open", async () => {
    await run.journey("system_revoke", async (step) => {
      const remote = await step("tunnel_up", async () => {
        const opened = await devicePage(ids.B);
        await opened.locator("text=Connected").waitFor({ timeout: 15_000 });
        expect(await tunnelUp(ids.B)).toBe(true);
        return opened;
      });
      await step("revoke", async () => {
        await page.goto(at(devicePath(ids.B)));
        page.once("dialog", (dialog) => void dialog.accept());
        await Promise.all([
          page.waitForURL((url) => url.pathname.startsWith("/devices")),
          page.click(`form[action="/devices/${ids.B}/revoke"] button`),
        ]);
        const [device] = await fleet.sql<{ approval_status: string }[]>`
          select approval_status from devices where id = ${ids.B}`;
        expect(device?.approval_status).toBe("rejected");
      });
      await step("token_refused", async () => {
        const identity = JSON.parse(
          await Bun.file(`${agents.B.dir}/root/var/lib/outpost-agent/identity.json`).text(),
        ) as { uuid: string; token: string };
        expect(identity.uuid).toBe(ids.B);
        const response = await fetch(
          `${fleet.agentUrl}/api/v1/devices/${ids.B}/heartbeat?api_key=${encodeURIComponent(identity.token)}`,
          { method: "POST", headers: { "content-type": "application/json" }, body: "{}" },
        );
        expect(response.status).toBe(403);
        expect(await response.text()).toContain("device_not_approved");
      });
      await step("tunnel_closed", async () => {
        await waitFor(async () => !(await tunnelUp(ids.B)), 15_000, "B's tunnel closed");
        await remote.close();
      });
      await step("terminal_refused", async () => {
        const refused = await postFromPage(page, `/devices/${ids.B}/terminal`);
        expect(refused.status).toBe(404);
        expect(refused.body).toContain("device_not_found");
      });
    });
  }, 120_000);

  test("3 custom script: installed from the console; its field in the builder; a report and its CSV hold the device's rows", async () => {
    await run.journey("system_custom_script", async (step) => {
      await step("install_script", async () => {
        await page.goto(at(devicePath(ids.A, "scripts")));
        await page.fill('#install-script-form textarea[name="text"]', PROBE_SCRIPT);
        await Promise.all([
          page.waitForURL((url) => url.searchParams.get("tab") === "commands", { timeout: 15_000 }),
          page.click('#install-script-form button[type="submit"]'),
        ]);
        await waitFor(
          async () => {
            const [command] = await fleet.sql<{ status: string; error: string | null }[]>`
              select status, error from pending_commands where device_id = ${ids.A} and type = 'install_script'
              order by queued_at desc limit 1`;
            if (command?.status === "failed") throw new Error(`install_script failed: ${command.error}`);
            return command?.status === "succeeded";
          },
          20_000,
          "A's agent to run the install_script command",
        );
        // The operator asks the device for its scripts; the list shows the new one.
        await page.goto(at(devicePath(ids.A, "scripts")));
        await page.click('button:has-text("Ask the device for its list")');
        await waitFor(
          async () => {
            await page.goto(at(devicePath(ids.A, "scripts")));
            const list = page.locator("[data-scripts-list]");
            return (await list.count()) > 0 && (await list.textContent())?.includes("system_probe");
          },
          20_000,
          "system_probe in the list A's agent gave",
        );
      });
      await step("field_in_builder", async () => {
        await waitFor(
          async () => {
            await page.goto(at("/reports/new"));
            return (
              (await page
                .locator('select[name="field_path_0"] option[value="system_probe.answer"]')
                .count()) > 0
            );
          },
          20_000,
          "system_probe.answer among the report builder's fields",
        );
      });
      const reportPath = await step("report_rows", async () => {
        await page.fill('#report-form input[name="name"]', "System probe");
        await page.selectOption('select[name="field_path_0"]', "system_probe.answer");
        await Promise.all([
          page.waitForURL(
            (url) => /^\/reports\/[^/]+$/.test(url.pathname) && url.pathname !== "/reports/new",
          ),
          page.click('#report-form button.primary[type="submit"]'),
        ]);
        const pathname = new URL(page.url()).pathname;
        let shown = "";
        await waitFor(
          async () => {
            await page.goto(at(pathname));
            // Rows name devices by the first 8 characters of their id.
            const rows = await page.locator("main table tbody tr").allTextContents();
            shown = rows.join(" | ");
            return rows.some((row) => row.startsWith(ids.A.slice(0, 8)) && row.endsWith("42"));
          },
          15_000,
          "A's rows with 42 in the report",
        ).catch((error) => {
          throw new Error(`${error.message}; the table showed: ${shown.slice(0, 500)}`);
        });
        return pathname;
      });
      await step("csv_rows", async () => {
        const csv = await page.evaluate(async (target) => (await fetch(target)).text(), `${reportPath}.csv`);
        const lines = csv.trim().split("\r\n");
        expect(lines[0]).toContain("system_probe.answer");
        expect(lines.slice(1).some((line) => line.includes(ids.A) && line.endsWith(",42"))).toBe(true);
      });
    });
  }, 120_000);

  // Journey 8 spans tests: the agent stops here, the offline window (1 minute) passes while 2 and 7 run.
  let offline: Awaited<ReturnType<typeof run.begin>> | undefined;
  let stoppedAt = 0;
  test("8 offline, first half: stop an agent", async () => {
    offline = await run.begin("system_offline");
    try {
      await offline.step("stop_agent", async () => {
        await agents.C.stop();
        stoppedAt = Date.now();
      });
    } catch (error) {
      await offline.end(error);
      offline = undefined;
      throw error;
    }
  }, 30_000);

  test("2 alert: a rule from the builder's options on a built-in field fires on real telemetry; email, signed webhook, acknowledge, auto-resolve", async () => {
    await run.journey("system_alert", async (step) => {
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
        const versions = `select[name="schema_version"] option:not([value=""])`;
        await choose("product_name", async () => "outpost-linux", versions);
        const version = async () =>
          (await page.locator(`${form} ${versions}`).first().getAttribute("value"))!;
        await choose(
          "schema_version",
          version,
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
            fleet.smtp.mails.find(
              (m) => m.to.includes("oncall@system.test") && m.raw.includes("Rule Breach"),
            ),
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
        const expected = createHmac("sha256", webhookSecret)
          .update(`${match![1]}.${hook.body}`)
          .digest("hex");
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
    });
  }, 120_000);

  test("7 faults: kill -9 the tunnel and a web process mid-journey; restarted, agents reconnect; queued commands run once", async () => {
    await run.journey("system_faults", async (step) => {
      const journeyStart = new Date(Date.now() - 1000).toISOString();
      const remote = await devicePage(ids.A);
      await remote.locator("text=Connected").waitFor({ timeout: 15_000 });
      const queueInstall = async (version: number) => {
        await page.goto(at(devicePath(ids.A, "scripts")));
        await page.fill(
          '#install-script-form textarea[name="text"]',
          PROBE_SCRIPT.replace("version: 1", `version: ${version}`),
        );
        // Queued, the console shows the device's commands.
        await Promise.all([
          page.waitForURL((url) => url.searchParams.get("tab") === "commands", { timeout: 15_000 }),
          page.click('#install-script-form button[type="submit"]'),
        ]);
      };
      const queued = () => fleet.sql<{ id: string; status: string }[]>`
        select id, status from pending_commands where device_id = ${ids.A} and type = 'install_script'
        and queued_at > ${journeyStart}::timestamptz order by queued_at`;
      await step("queue_commands", async () => {
        await queueInstall(2);
      });
      await step("kill_tunnel_and_web", async () => {
        await Promise.all([fleet.kill("tunnel"), fleet.kill("web1")]);
        // Mid-journey: the operator goes on queueing while they are down (Caddy sends it to web2).
        await queueInstall(3);
        await queueInstall(4);
        await waitFor(async () => (await queued()).length === 3, 10_000, "three install commands queued");
      });
      await step("restart", async () => {
        await Promise.all([fleet.restart("tunnel"), fleet.restart("web1")]);
      });
      await step("agents_reconnect", async () => {
        const restarted = new Date().toISOString();
        await waitFor(
          async () =>
            (
              await fleet.sql`select 1 from devices where id = ${ids.A} and last_seen_at > ${restarted}::timestamptz`
            ).length > 0,
          15_000,
          "a heartbeat from A after the restart",
        );
        // A row of the killed process may linger: the agent's new tunnel is one connected since.
        await waitFor(
          async () =>
            (
              await fleet.sql`select 1 from tunnel_connections where device_id = ${ids.A}
                and connected_at > ${restarted}::timestamptz`
            ).length > 0,
          30_000,
          "A's tunnel back on the restarted tunnel process",
        );
      });
      await step("commands_once", async () => {
        const commands = await waitFor(
          async () => {
            const rows = await queued();
            const done =
              rows.length === 3 && rows.every((r) => r.status !== "queued" && r.status !== "delivered");
            return done ? rows : undefined;
          },
          20_000,
          "the three install commands to finish",
        );
        expect(commands.map((c) => c.status)).toEqual(["succeeded", "succeeded", "succeeded"]);
        const log = agents.A.log().split("\n");
        for (const command of commands) {
          const runs = log.filter(
            (line) => line.includes(`"command_id":"${command.id}"`) && line.includes("command executed"),
          );
          expect(runs.length).toBe(1);
        }
      });
      await step("tunnel_again", async () => {
        // The page's live connection was served by a process that died: the operator reloads it.
        await remote.reload();
        await remote.locator("text=Connected").waitFor({ timeout: 15_000 });
        const [popup] = await Promise.all([
          remote.waitForEvent("popup"),
          remote.locator("[data-open-web-ui]").click({ timeout: 10_000 }),
        ]);
        await popup
          .locator("h1", { hasText: "device A" })
          .waitFor({ timeout: 15_000 })
          .catch(async (error) => {
            throw new Error(
              `${error.message}; ${popup.url()} showed: ${(await popup.content()).slice(0, 300)}`,
            );
          });
        await popup.close();
        await remote.close();
      });
    });
  }, 150_000);

  test("8 offline, second half: offline alert, start again, resolved", async () => {
    const journey = offline;
    if (!journey) throw new Error("the first half of the offline journey did not run");
    try {
      const alertId = await journey.step("offline_alert", async () => {
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
      await journey.step("start_agent", async () => {
        await page.goto(at(`/alerts/${alertId}`));
        expect(await page.textContent("main")).toContain("hasn't reported");
        agents.C.start();
      });
      await journey.step("resolved", async () => {
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
    } catch (error) {
      await journey.end(error);
      throw error;
    }
    await journey.end();
  }, 180_000);

  test("the console's E2E page shows the run that tested it, journey by journey", async () => {
    await page.goto(at(`/e2e?run=${run.runId}`));
    const shown = (await page.textContent("main")) ?? "";
    for (const record of run.records) expect(shown).toContain(record.id);
    expect(shown).toContain("system");
  }, 30_000);
});
