// The system journeys (issue 40; docs/testing.md "System journeys"): Outpost deployed as separate
// processes behind Caddy, three real compiled agents installed by the console's one-liner, operator
// steps in Chromium, each journey reported to the E2E run API of the Outpost under test.
// Journeys share the fleet and run in order; each step's waits are bounded.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { agentBinary } from "../helpers/agent-binary";
import { LAPTOP, launchBrowser } from "../helpers/browser";
import { REPO } from "../helpers/process";
import { startSystemRun } from "./e2e-run";
import { ADMIN, DOMAIN, startFleet } from "./fleet";
import { remoteAccess, revoke, terminal } from "./journeys/access";
import { alert, offlineResolve, offlineStop } from "./journeys/alerts";
import { customScript, enrol } from "./journeys/enrolment";
import { faults } from "./journeys/faults";
import { rollout } from "./journeys/rollout";
import { createWorld } from "./world";

const ARTIFACTS = path.join(REPO, "artifacts/system");

// At the top level, as every test file starts its servers: helpers register their afterAll here.
// This hook comes first (hooks run in order), so the run is finished while Outpost still runs.
const finish: { run?: () => Promise<void> } = {};
afterAll(() => finish.run?.());
await agentBinary("x64");
const fleet = await startFleet();
const browser = await launchBrowser([
  `--host-resolver-rules=MAP *.${DOMAIN} 127.0.0.1`,
  "--ignore-certificate-errors",
]);
const context = await browser.newContext({ viewport: LAPTOP, ignoreHTTPSErrors: true });
const page = await context.newPage();
const world = createWorld(fleet, context, page);
const { at } = world;
const run = await startSystemRun(fleet.agentUrl);

finish.run = async () => {
  // What every process and agent said, for a failure's post-mortem (CI keeps artifacts/).
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const [role, child] of Object.entries(fleet.processes))
    writeFileSync(
      path.join(ARTIFACTS, `${role}.log`),
      `${child.output()}\n[exit ${child.process.exitCode ?? child.process.signalCode ?? "running"}]\n`,
    );
  for (const agent of Object.values(world.agents))
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
  world.webhookSecret = (await page.textContent("#webhook-secret", { timeout: 10_000 }))?.trim() ?? "";
  expect(world.webhookSecret).toMatch(/^whsec_/);
}, 60_000);

describe("system journeys", () => {
  test("1 enrol: token → one-liner → registered → telemetry on the device page within 10 s", async () => {
    await run.journey("system_enrol", (step) => enrol(world, step));
  }, 180_000);

  test("4 remote access: Open web UI through Caddy shows the device's page; closing the device page ends access (403 after the grace)", async () => {
    await run.journey("system_remote_access", (step) => remoteAccess(world, step));
  }, 120_000);

  test("5 terminal: echo $((6*7)) shows 42; the recording plays and holds 42", async () => {
    await run.journey("system_terminal", (step) => terminal(world, step));
  }, 120_000);

  test("6 revoke: the token is refused, the tunnel closes, a terminal cannot open", async () => {
    await run.journey("system_revoke", (step) => revoke(world, step));
  }, 120_000);

  test("3 custom script: installed from the console; its field in the builder; a report and its CSV hold the device's rows", async () => {
    await run.journey("system_custom_script", (step) => customScript(world, step));
  }, 120_000);

  // Journey 8 spans tests: the agent stops here, the offline window (1 minute) passes while 2 and 7 run.
  let offline: Awaited<ReturnType<typeof run.begin>> | undefined;
  let stoppedAt = 0;
  test("8 offline, first half: stop an agent", async () => {
    offline = await run.begin("system_offline");
    try {
      stoppedAt = await offlineStop(world, offline.step);
    } catch (error) {
      await offline.end(error);
      offline = undefined;
      throw error;
    }
  }, 30_000);

  test("2 alert: a rule from the builder's options on a built-in field fires on real telemetry; email, signed webhook, acknowledge, auto-resolve", async () => {
    await run.journey("system_alert", (step) => alert(world, step));
  }, 120_000);

  test("7 faults: kill -9 the tunnel and a web process mid-journey; restarted, agents reconnect; queued commands run once", async () => {
    await run.journey("system_faults", (step) => faults(world, step));
  }, 150_000);

  test("8 offline, second half: offline alert, start again, resolved", async () => {
    const journey = offline;
    if (!journey) throw new Error("the first half of the offline journey did not run");
    try {
      await offlineResolve(world, journey.step, stoppedAt);
    } catch (error) {
      await journey.end(error);
      throw error;
    }
    await journey.end();
  }, 180_000);

  test("9 rollout: two waves from the device list to A and C; A's agent refuses the script, the rollout pauses at the threshold; resume completes it", async () => {
    await run.journey("system_rollout", (step) => rollout(world, step));
  }, 150_000);

  test("the console's E2E page shows the run that tested it, journey by journey", async () => {
    await page.goto(at(`/e2e?run=${run.runId}`));
    const shown = (await page.textContent("main")) ?? "";
    for (const record of run.records) expect(shown).toContain(record.id);
    expect(shown).toContain("system");
  }, 30_000);
});
