// The system journeys (issue 40; docs/testing.md "System journeys"): Outpost deployed as separate
// processes behind Caddy, three real compiled agents installed by the console's one-liner, operator
// steps in Chromium, each journey reported to the E2E run API of the Outpost under test.
// Journeys share the fleet and run in order; each step's waits are bounded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
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
await agentBinary("x64");
const fleet: Fleet = await startFleet();
const browser = await launchBrowser([
  `--host-resolver-rules=MAP *.${DOMAIN} 127.0.0.1`,
  "--ignore-certificate-errors",
]);
const context: BrowserContext = await browser.newContext({ viewport: LAPTOP, ignoreHTTPSErrors: true });
const page: Page = await context.newPage();
const run = await startSystemRun(() => fleet.webUrl());
/** The three devices: A (remote access, terminal, alert, faults), B (custom script, revoke), C (offline). */
const agents: Record<"A" | "B" | "C", Agent> = {} as never;
const ids: Record<"A" | "B" | "C", string> = {} as never;

beforeAll(async () => {
  await page.goto(`${fleet.consoleUrl}/login`);
  await page.fill('input[name="email"]', ADMIN.email);
  await page.fill('input[name="password"]', ADMIN.password);
  await Promise.all([
    page.waitForURL((url) => url.pathname !== "/login"),
    page.click('button[type="submit"]'),
  ]);
}, 30_000);

afterAll(async () => {
  // What every process and agent said, for a failure's post-mortem (CI keeps artifacts/).
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const [role, child] of Object.entries(fleet.processes))
    writeFileSync(path.join(ARTIFACTS, `${role}.log`), child.output());
  for (const agent of Object.values(agents))
    writeFileSync(path.join(ARTIFACTS, `agent-${agent.name}.log`), agent.log());
  const times = run?.records.map((r) => `${r.id} ${r.status} ${(r.durationMs / 1000).toFixed(1)} s`);
  if (times) console.log(`system journeys (run ${run.runId}):\n  ${times.join("\n  ")}`);
});

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
        const started = Date.now();
        for (const agent of Object.values(agents)) agent.start();
        await Promise.all(
          (["A", "B", "C"] as const).map(async (name) => {
            const tab = await context.newPage();
            await waitFor(
              async () => {
                await tab.goto(at(devicePath(ids[name], "overview")));
                const label = await tab.getAttribute('.gauges svg[aria-label^="Memory"]', "aria-label");
                return label && /^Memory: \d/.test(label);
              },
              Math.max(1, 10_000 - (Date.now() - started)),
              `device ${name}'s memory figure on its page within 10 s of the agent starting`,
            );
            await tab.close();
          }),
        );
      });
    });
  }, 180_000);

  test("4 remote access: Open web UI through Caddy shows the device's page; closing the device page ends access (403 after the grace)", async () => {
    await run.journey("system_remote_access", async (step) => {
      await page.goto(at("/alerts")); // no other console page of A holds a lease
      const console = await step("open_device_page", async () => {
        const opened = await devicePage(ids.A);
        await opened.locator("[data-remote-panel]").waitFor({ timeout: 10_000 });
        await opened.locator("text=Connected").waitFor({ timeout: 15_000 });
        return opened;
      });
      const deviceUi = await step("open_web_ui", async () => {
        const [popup] = await Promise.all([
          console.waitForEvent("popup"),
          console.locator("[data-open-web-ui]").click(),
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
        await console.close({ runBeforeUnload: true });
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
        await page.click('#install-script-form button[type="submit"]');
        await page.locator("#install-script-form").waitFor({ timeout: 10_000 });
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
});
