// A rollout's progress page follows the console's live channel (docs/console.md, _Live updates_): a
// device's command result, recorded by the driver (the worker's real job), changes the counts and the
// device's row without a reload and without polling: while nothing changes, the page makes no request
// for its progress section at all. The results are the agent's own (agent/commands/executor.ts run on
// the commands the heartbeat reply carried).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Page } from "playwright-core";
import { executeCommands } from "../../agent/commands/executor";
import type { ServerCommand } from "../../agent/commands/types";
import { ScriptStore } from "../../agent/scripts/store";
import { logger, testConfig } from "../agent/helpers";
import { approvedDevice, heartbeat, postResults, signedIn } from "../console/helpers";
import { json } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser } from "../helpers/browser";
import { script } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();
const agentDir = mkdtempSync(path.join(tmpdir(), "outpost-rollout-live-"));
/** Each device's agent: its own state directory, as on a real device. */
function agentOf(n: number) {
  const config = testConfig(path.join(agentDir, String(n)));
  return { config, store: new ScriptStore(config.scripts_dir), logger };
}
afterAll(async () => {
  await browser.close();
  await app.stop();
  rmSync(agentDir, { recursive: true, force: true });
});

type Device = { id: string; token: string };
const IDLE = { telemetry: { device: {}, scripts: {}, meta: {} } };

/** The device's heartbeat until its reply carries its command (the driver queues it): bounded. */
async function claim(device: Device): Promise<ServerCommand[]> {
  for (let i = 0; i < 60; i++) {
    const { commands } = await heartbeat(app, device, IDLE);
    if (commands.length > 0) return commands as ServerCommand[];
    await Bun.sleep(250);
  }
  throw new Error("the rollout's command never reached the device");
}

/** Two devices and a one-wave script rollout to both. */
async function startRollout() {
  const devices: Device[] = await Promise.all([1, 2].map(() => approvedDevice(app)));
  const operator = await app.token("operator");
  const created = await app.fetch("/api/v1/rollouts", {
    ...json({
      action: { type: "install_script", script: script("live") },
      target: { ids: devices.map((d) => d.id) },
      concurrency: 2,
    }),
    headers: { "content-type": "application/json", authorization: `Bearer ${operator}` },
  });
  expect(created.status).toBe(201);
  return { devices, rollout: ((await created.json()) as { data: { id: string } }).data };
}

const delivered = (page: Page, n: number) =>
  page.waitForFunction(
    (n) => document.querySelector('[data-count="delivered"]')?.textContent === String(n),
    n,
    { timeout: 20_000 },
  );

describe("rollout progress over the live channel", () => {
  test("a result arriving updates counts and row without a reload; no polling while nothing changes", async () => {
    const { devices, rollout } = await startRollout();

    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    const progressRequests: number[] = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname === `/rollouts/${rollout.id}/progress`)
        progressRequests.push(Date.now());
    });
    await page.goto(`${app.url}/rollouts/${rollout.id}`);
    await page.waitForSelector('[data-live-status][data-state="live"]');
    await page.evaluate(() => {
      (window as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    const count = (state: string) => page.locator(`[data-count="${state}"]`).textContent();

    // Both devices take their commands: the driver records them delivered, the page follows.
    const commands = await Promise.all(devices.map(claim));
    await delivered(page, 2);

    // Nothing changes now: the page asks for nothing (the old page polled every 2 s).
    await page.waitForTimeout(1500); // a refresh already on its way lands
    const quietFrom = Date.now();
    await page.waitForTimeout(5000);
    expect(progressRequests.filter((at) => at >= quietFrom)).toEqual([]);

    // One device's result arrives: the driver records it, the live event refreshes the page.
    const [first] = devices;
    const results = await executeCommands(commands[0]!, agentOf(0));
    expect(results).toEqual([expect.objectContaining({ status: "OK" })]);
    await postResults(app, first!, results);
    await page.waitForFunction(
      () => document.querySelector('[data-count="succeeded"]')?.textContent === "1",
      undefined,
      { timeout: 20_000 },
    );
    expect(await count("delivered")).toBe("1");
    expect(
      await page.locator(`#rollout-targets tr[data-device-id="${first!.id}"]`).getAttribute("data-state"),
    ).toBe("succeeded");
    expect(progressRequests.filter((at) => at >= quietFrom).length).toBeGreaterThanOrEqual(1);
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(
      true,
    );

    // The last result finishes the rollout: the page says so, still without a reload.
    await postResults(app, devices[1]!, await executeCommands(commands[1]!, agentOf(1)));
    await page.waitForFunction(
      () => document.querySelector("#rollout-live")?.getAttribute("data-status") === "completed",
      undefined,
      { timeout: 20_000 },
    );
    expect(await count("succeeded")).toBe("2");
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(
      true,
    );
    await context.close();
  }, 120_000);

  test("a refresh waits while Pause is pressed: the release still pauses", async () => {
    const { devices, rollout } = await startRollout();
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/rollouts/${rollout.id}`);
    await page.waitForSelector('[data-live-status][data-state="live"]');
    const commands = await Promise.all(devices.map(claim));
    await delivered(page, 2);
    await page.waitForTimeout(1500); // a refresh already on its way lands

    const pause = page.locator('#rollout-controls button:has-text("Pause")');
    const box = (await pause.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    const refreshed = page.waitForResponse(
      (response) => new URL(response.url()).pathname === `/rollouts/${rollout.id}/progress`,
      { timeout: 20_000 },
    );
    await postResults(app, devices[0]!, await executeCommands(commands[0]!, agentOf(2)));
    await refreshed;
    await page.waitForTimeout(300); // what htmx would take to swap it in
    // Not swapped yet: the pressed button is the one the page had, the count the old one.
    expect(await pause.evaluate((button) => button.isConnected)).toBe(true);
    expect(await page.locator('[data-count="succeeded"]').textContent()).toBe("0");
    await page.mouse.up();
    await page.locator(".flash.success", { hasText: "Paused" }).waitFor({ timeout: 10_000 });
    expect(await page.locator("#rollout-live").getAttribute("data-status")).toBe("paused");
    await context.close();
  }, 120_000);
});
