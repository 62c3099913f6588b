// The device page keeps its panels current without a reload (issue 42): the Overview's API token once
// the approved device registers again, its remote-access line once a lease is active (the page's own,
// opened right after it rendered), and the Terminal tab's sessions list once a session ended.
import { afterAll, describe, expect, test } from "bun:test";
import { approveDevices } from "../../modules/devices/service";
import { deviceSecret, json, onlineDevice, register } from "../devices/helpers";
import { form, startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser, screenshot } from "../helpers/browser";
import { startTerminal } from "../terminal/helpers";
import { signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();
afterAll(() => browser.close());

/** The Overview's value for a fact (`API token`, `Remote access`). */
function fact(page: import("playwright-core").Page, label: string) {
  return page.locator(`#tab-panel dl.facts dt:text-is("${label}") + dd`);
}

/** An operator's page at a tab of an online device. */
async function onlineDevicePage(tab: string) {
  const device = await onlineDevice(app);
  const context = await signedIn(browser, app, "operator", LAPTOP);
  const page = await context.newPage();
  await page.goto(`${app.url}/devices/${device.id}?tab=${tab}`);
  return { device, context, page };
}

describe("live device panels", () => {
  test("Overview: the API token shows issued once the approved device registers again", async () => {
    const secret = deviceSecret();
    const pending = await register(app, { device_secret: secret });
    const context = await signedIn(browser, app, "operator", LAPTOP);
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${pending.body.data.id}`);
    expect(await fact(page, "API token").textContent()).toBe("not issued");
    await page.waitForSelector('[data-live-status][data-state="live"]'); // its live stream is connected

    await approveDevices(app.database.sql, [pending.body.data.id]);
    const again = await app.fetch(
      "/api/v1/devices/register",
      json({ mac_address: pending.body.data.mac_address, device_secret: secret }),
    );
    expect(((await again.json()) as { data: { api_token?: string } }).data.api_token).toBeString();
    await fact(page, "API token")
      .filter({ hasText: /^issued$/ })
      .waitFor({ timeout: 10_000 });
    await context.close();
  }, 60_000);

  test("Overview: remote access shows requested while the page's lease is active", async () => {
    const { device, context, page } = await onlineDevicePage("overview");
    // The page rendered before its keeper opened the lease.
    await fact(page, "Remote access")
      .filter({ hasText: /^requested$/ })
      .waitFor({ timeout: 10_000 });
    const [row] = await app.database.sql<{ r: boolean }[]>`
      select remote_access_requested as r from devices where id = ${device.id}`;
    expect(row!.r).toBe(true);
    await screenshot(page, "device-overview-live");
    await context.close();
  }, 60_000);

  test("Terminal: a session that ended shows in the sessions list", async () => {
    const { device, context, page } = await onlineDevicePage("terminal");
    await page.locator("#terminal-sessions", { hasText: "No terminal sessions yet" }).waitFor();
    await page.waitForSelector('[data-live-status][data-state="live"]'); // its live stream is connected

    // Another operator's session, ended from its playback page.
    const other = await app.session("operator");
    const started = await startTerminal(app, device.id, other);
    expect(started.status).toBe(201);
    const ended = await app.fetch(
      `/terminal/sessions/${started.data.session_id}/end`,
      form({ _csrf: other.csrf }, { cookie: other.cookie }),
    );
    expect(ended.status).toBe(303);
    const row = page.locator(`#terminal-sessions tr[data-session-id="${started.data.session_id}"]`);
    await row.waitFor({ timeout: 10_000 });
    expect(await row.textContent()).toContain("Ended by an operator");
    // The terminal itself was left alone.
    expect(await page.locator("#terminal [data-terminal-start]").isVisible()).toBe(true);
    await screenshot(page, "device-terminal-sessions-live");
    await context.close();
  }, 60_000);
});
