// Online/offline changes reach an open device list without reload, and the live trigger honours
// DEVICE_ONLINE_WINDOW_SECONDS when no operator saved a window (migration 0008).
import { describe, expect, test } from "bun:test";
import { TICK_MS } from "../../modules/live/hub";
import { startTestApp } from "../helpers/app";
import { launchBrowser, screenshot } from "../helpers/browser";
import { advancing } from "../helpers/clock";
import { markSeen } from "../helpers/seen";
import { agentHeartbeat, approvedDevice, heartbeat, notificationsDuring, signedIn } from "./helpers";

const app = await startTestApp({ DEVICE_ONLINE_WINDOW_SECONDS: "60" });
const browser = await launchBrowser();

const age = (id: string, seconds: number) => markSeen(app.database.sql, id, seconds);

describe("live connectivity", () => {
  test("the trigger uses the env online window when no operator saved one", async () => {
    const device = await approvedDevice(app, { product_name: "window-env" });
    await heartbeat(app, device, await agentHeartbeat({ cpu: 1, memory: 2, disk: 3 }));
    // Back after 90 s: offline under a 60 s window (it would still be online under 300 s).
    await age(device.id, 90);
    const back = await notificationsDuring(app, async () =>
      heartbeat(app, device, await agentHeartbeat({ cpu: 1, memory: 2, disk: 3 })).then(() => {}),
    );
    expect(back).toEqual(["devices"]);
    // Within the window: a routine heartbeat stays quiet.
    await age(device.id, 45);
    const routine = await notificationsDuring(app, async () =>
      heartbeat(app, device, await agentHeartbeat({ cpu: 1, memory: 2, disk: 3 })).then(() => {}),
    );
    expect(routine).toEqual([]);

    // Recording the default is not an override: no online_window_seconds row, Settings shows 1 min.
    const keys = await app.database.sql<{ key: string }[]>`select key from system_settings order by key`;
    expect(keys.map((k) => k.key)).toEqual(["online_window_seconds_default"]);
    expect((await app.services.settings.device()).onlineWindowSeconds).toBe(60);
    const admin = await app.session("admin");
    const settings = await (await app.fetch("/settings", { headers: { cookie: admin.cookie } })).text();
    expect(settings).toMatch(
      /name="online_window_minutes"[^>]*value="1"|value="1"[^>]*name="online_window_minutes"/,
    );

    // An operator's saved window wins over the env default in the trigger too.
    await app.database
      .sql`insert into system_settings (key, value) values ('online_window_seconds', '600'::jsonb)`;
    await age(device.id, 90);
    const overridden = await notificationsDuring(app, async () =>
      heartbeat(app, device, await agentHeartbeat({ cpu: 1, memory: 2, disk: 3 })).then(() => {}),
    );
    expect(overridden).toEqual([]);
    await app.database.sql`delete from system_settings where key = 'online_window_seconds'`;
  }, 30_000);

  test("an open device list shows a device going offline and back online without reload", async () => {
    const device = await approvedDevice(app, { product_name: "live-offline", metadata: { name: "tower-3" } });
    await heartbeat(app, device, await agentHeartbeat({ cpu: 5, memory: 10, disk: 20 }));
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices?product=live-offline`);
    await page.waitForSelector('[data-live-status][data-state="live"]');
    const badge = page.locator("tbody tr", { hasText: "tower-3" }).locator("td.c-online .badge");
    expect(await badge.textContent()).toBe("online");
    await page.evaluate(() => {
      (window as unknown as { marker: boolean }).marker = true; // gone if the page reloads
    });

    // Silence: nothing is written when a device goes offline; the hub's re-count notices.
    await age(device.id, 2 * 3600);
    // The hub re-counts every TICK_MS of its clock: the test moves the app's clock on.
    await advancing(
      app.clock,
      TICK_MS,
      page.waitForSelector('tbody tr:has-text("tower-3") td.c-online .badge:text-is("offline")', {
        timeout: 15_000,
      }),
    );
    await screenshot(page, "console-devices-live-offline");

    // A heartbeat after the silence turns it online (the trigger notifies).
    await heartbeat(app, device, await agentHeartbeat({ cpu: 5, memory: 10, disk: 20 }));
    await page.waitForSelector('tbody tr:has-text("tower-3") td.c-online .badge:text-is("online")', {
      timeout: 5_000,
    });
    expect(await page.evaluate(() => (window as unknown as { marker?: boolean }).marker)).toBe(true);
    await context.close();
  }, 60_000);
});
