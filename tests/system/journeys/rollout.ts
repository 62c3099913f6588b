// Journey 9: a two-wave rollout from the device list to real agents. A already runs system_probe
// (journeys 3 and 7), so its agent refuses version 1 (no downgrade): the wave it is in passes the 0 %
// failure threshold and the rollout pauses; resumed, it completes, C having installed the script.
import { expect } from "bun:test";
import { waitFor } from "../../terminal/helpers";
import { PROBE_SCRIPT, type Step, type World } from "../world";

export async function rollout(w: World, step: Step) {
  const { page, ids, at } = w;
  const status = () => page.locator("#rollout-live").getAttribute("data-status");
  await step("start_from_device_list", async () => {
    await page.goto(at("/devices"));
    for (const id of [ids.A, ids.C]) await page.check(`tr[data-device-id="${id}"] [data-select-row]`);
    await Promise.all([page.waitForURL(/\/rollouts\/new\?/), page.click("[data-rollout-selection]")]);
    await page.selectOption('select[name="action"]', "install_script");
    await page.fill('textarea[name="script"]', PROBE_SCRIPT);
    await page.fill('input[name="canary"]', "1");
    await page.fill('input[name="failure_threshold"]', "0");
    await Promise.all([
      page.waitForURL(/\/rollouts\/[0-9a-f-]{36}$/, { timeout: 15_000 }),
      page.click("#rollout-form button[type=submit]"),
    ]);
  });
  await step("paused_at_threshold", async () => {
    // The page refreshes itself while the agents answer.
    await waitFor(async () => (await status()) === "paused", 60_000, "the rollout to pause at its threshold");
    const failed = page.locator('#rollout-targets tr[data-state="failed"]');
    expect(await failed.getAttribute("data-device-id")).toBe(ids.A);
    expect(await failed.textContent()).toContain("version must be greater");
  });
  await step("resume_completes", async () => {
    await Promise.all([
      page.waitForURL(/\/rollouts\/[0-9a-f-]{36}$/),
      page.click('#rollout-controls button:has-text("Resume")'),
    ]);
    await waitFor(async () => (await status()) === "completed", 60_000, "the rollout to complete");
    expect(await page.locator('[data-count="succeeded"]').textContent()).toBe("1");
    expect(await page.locator('[data-count="failed"]').textContent()).toBe("1");
    expect(
      await page.locator(`#rollout-targets tr[data-device-id="${ids.C}"]`).getAttribute("data-state"),
    ).toBe("succeeded");
  });
}
