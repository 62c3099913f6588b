// The system journeys (issue 40; docs/testing.md "System journeys"): Outpost deployed as separate
// processes behind Caddy, three real compiled agents installed by the console's one-liner, operator
// steps in Chromium, each journey reported to the E2E run API of the Outpost under test.
// Journeys share the fleet and run in order; each step's waits are bounded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { BrowserContext, Page } from "playwright-core";
import { agentBinary } from "../helpers/agent-binary";
import { LAPTOP, launchBrowser } from "../helpers/browser";
import { waitFor } from "../terminal/helpers";
import { type Agent, deviceInterfaces, installAgent } from "./agents";
import { startSystemRun } from "./e2e-run";
import { ADMIN, DOMAIN, type Fleet, startFleet } from "./fleet";

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
  const times = run?.records.map((r) => `${r.id} ${r.status} ${(r.durationMs / 1000).toFixed(1)} s`);
  if (times) console.log(`system journeys (run ${run.runId}):\n  ${times.join("\n  ")}`);
});

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
        for (const name of ["A", "B", "C"] as const) {
          await waitFor(
            async () => {
              await page.goto(at(devicePath(ids[name])));
              const label = await page.getAttribute('.gauges svg[aria-label^="Memory"]', "aria-label");
              return label && /^Memory: \d/.test(label);
            },
            Math.max(1, 10_000 - (Date.now() - started)),
            `device ${name}'s memory figure on its page within 10 s of the agent starting`,
          );
        }
      });
    });
  }, 180_000);
});
