// "Run a script once" in real Chromium: the form on the Scripts tab (refused in place, pasted text
// posted with CRLF), one real agent poll runs it, and the Commands tab shows its exit code and output,
// escaped.
import { afterAll, describe, expect, test } from "bun:test";
import path from "node:path";
import { COMMAND_HANDLERS, executeCommands } from "../../agent/commands/executor";
import { ScriptStore } from "../../agent/scripts/store";
import { queueRunScript } from "../../modules/commands/service";
import { logger, tempDir, testConfig } from "../agent/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser, SCREENSHOT_DIR, screenshot } from "../helpers/browser";
import { agentHeartbeat, agentPollAs, approvedDevice, heartbeat, postResults, signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();
const agentState = tempDir("outpost-console-run-once-");
afterAll(async () => {
  await browser.close();
  agentState.cleanup();
  await app.stop();
});

const device = await approvedDevice(app, { product_name: "edge-gateway", metadata: { name: "pump-7" } });

describe("run a script once from the device page", () => {
  test("queued from the form, run by the agent, its output on the Commands tab", async () => {
    await heartbeat(app, device, await agentHeartbeat({ cpu: 5, memory: 30, disk: 40 }));
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);

    // A shell script is refused in place, with the reason, and kept for correction.
    await page.fill('#run-once textarea[name="script"]', "#!/bin/sh\ndf -h");
    await page.click('button:has-text("Run once")');
    await page.locator("#run-once .field-error").waitFor();
    expect(await page.locator("#run-once .field-error").textContent()).toContain("not a shell");
    expect(await page.inputValue('#run-once textarea[name="script"]')).toBe("#!/bin/sh\ndf -h");
    expect(new URL(page.url()).pathname).toBe(`/devices/${device.id}`);
    await page
      .locator("#run-once")
      .screenshot({ path: path.join(SCREENSHOT_DIR, "console-run-once-form.png") });

    // Markup in the output must reach the page as text.
    const script = [
      "console.log('<b id=\"injected\">free</b> 42 & more');",
      "console.error('low on inodes');",
      "async function main() { return { checked: 3 }; }",
    ].join("\n");
    await page.fill('#run-once textarea[name="script"]', script);
    await page.fill('#run-once input[name="name"]', "Disk check");
    await page.fill('#run-once input[name="timeout_seconds"]', "20");
    await page.click('button:has-text("Run once")');
    await page.waitForURL(/tab=commands/);
    expect(await page.locator(".flash.success").textContent()).toContain(
      '"Disk check" is queued to run once',
    );
    const [queued] = await app.database.sql<{ id: string; payload: { data: string } }[]>`
      select id::text, payload from pending_commands where device_id = ${device.id}::uuid and type = 'run_script'`;
    // The browser posted the textarea with CRLF; the device receives the text with LF.
    expect(queued!.payload.data).toBe(script);

    await agentPollAs(app, agentState.dir, device, { run_script_enabled: true });
    await page.reload();
    const row = page.locator(`tr[data-command-id="${queued!.id}"]`);
    expect(await row.locator(".badge").first().textContent()).toBe("succeeded");
    expect(await row.locator(".command-subject").textContent()).toBe(" Disk check");
    const output = row.locator("[data-run-output]");
    expect(await output.locator(".badge").textContent()).toBe("exit code 0");
    expect(await output.locator('pre[data-stream="stdout"]').textContent()).toBe(
      '<b id="injected">free</b> 42 & more\n{"checked":3}\n',
    );
    expect(await output.locator('pre[data-stream="stderr"]').textContent()).toBe("low on inodes\n");
    expect(await page.locator("#injected").count()).toBe(0);
    await screenshot(page, "console-device-run-once");
    await context.close();
  }, 90_000);

  test("an agent older than run_script answers it unsupported: the Commands tab says to upgrade it", async () => {
    const sql = app.database.sql;
    await queueRunScript(sql, { deviceId: device.id, script: "console.log(1);", ttlSeconds: 600 });
    const { commands } = await heartbeat(app, device, await agentHeartbeat({ cpu: 5, memory: 30, disk: 40 }));
    // The agent's own executor, as an agent without the run_script handler runs it.
    const { run_script: _, ...older } = COMMAND_HANDLERS;
    const config = testConfig(agentState.dir);
    const results = await executeCommands(
      commands,
      { config, store: new ScriptStore(config.scripts_dir), logger },
      new Map(),
      older,
    );
    await postResults(app, device, results);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=commands`);
    const row = page.locator(`tr[data-command-id="${commands[0]!.command_id}"]`);
    expect(await row.locator(".field-error").textContent()).toBe("unsupported command: run_script");
    expect(await row.textContent()).toContain("upgrade the agent");
    await context.close();
  });

  test("viewers see the output but not the form", async () => {
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    expect(await page.locator("#run-once").count()).toBe(0);
    await page.goto(`${app.url}/devices/${device.id}?tab=commands`);
    expect(await page.locator("[data-run-output]").count()).toBe(1);
    await context.close();
  });
});
