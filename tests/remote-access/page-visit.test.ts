// Spec, remote access step 1: an operator opening the device view (any tab) while the device is online
// requests remote access. Moving between the page's tabs keeps one lease (the next page takes it over);
// leaving the device ends it; viewers and offline devices open none.
import { afterAll, describe, expect, test } from "bun:test";
import { signedIn } from "../console/helpers";
import { approvedDevice, onlineDevice } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser } from "../helpers/browser";
import { waitFor } from "./helpers";

// A closed page's lease waits 2 s (not the default 10 s) for another page to take it over.
const app = await startTestApp({ BASE_DOMAIN: "visit.test", REMOTE_ACCESS_PAGE_GRACE_SECONDS: "2" });
const browser = await launchBrowser();
afterAll(() => browser.close());

async function openLeases(deviceId: string) {
  return app.database.sql<{ id: string; owner_kind: string }[]>`
    select id, owner_kind from remote_access_leases
    where device_id = ${deviceId} and ended_at is null and expires_at > now()`;
}

describe("a device page visit requests remote access", () => {
  test("any tab opens the operator's lease; another tab takes it over; leaving ends it", async () => {
    const device = await onlineDevice(app);
    const context = await signedIn(browser, app, "operator", LAPTOP);
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=telemetry`);
    await waitFor(async () => (await openLeases(device.id)).length === 1, 10_000, "the page's lease");
    const [first] = await openLeases(device.id);
    expect(first!.owner_kind).toBe("console");
    const [row] = await app.database.sql<{ r: boolean }[]>`
      select remote_access_requested as r from devices where id = ${device.id}`;
    expect(row!.r).toBe(true);

    await page.click('nav.tabs a:has-text("Commands")');
    await page.waitForURL(/tab=commands/);
    await Bun.sleep(3000); // past the 2 s the closed page's lease waits for a taker
    const after = await openLeases(device.id);
    expect(after.map((l) => l.id)).toEqual([first!.id]);

    await page.reload();
    await page.goto(`${app.url}/devices`);
    await waitFor(async () => (await openLeases(device.id)).length === 0, 20_000, "the lease to end");
    // The audit log: the lease's start and end, and nothing per page visit (issue 42: each visit wrote a
    // remote_access.view and a remote_access.close).
    await Bun.sleep(500); // the HTTP recorder writes after the answer
    const events = await app.database.sql<{ action: string; details: Record<string, string> }[]>`
      select action, details from audit_events where target = ${`device:${device.id}`} order by at`;
    expect(events.map((e) => e.action)).toEqual(["remote_access.start", "remote_access.end"]);
    expect(events[0]!.details).toEqual({ lease_id: first!.id, owner: "console" });
    expect(events[1]!.details).toEqual({ lease_id: first!.id, owner: "console", reason: "page_left" });
    await context.close();
  }, 60_000);

  test("two tabs of one device: closing one leaves remote access to the other (issue 42)", async () => {
    const device = await onlineDevice(app);
    const context = await signedIn(browser, app, "operator", LAPTOP);
    const first = await context.newPage();
    await first.goto(`${app.url}/devices/${device.id}?tab=remote`);
    await waitFor(async () => (await openLeases(device.id)).length === 1, 10_000, "the first tab's lease");
    const [lease] = await openLeases(device.id);
    const second = await context.newPage();
    await second.goto(`${app.url}/devices/${device.id}?tab=remote`);
    // Both tabs hold the one lease with their live streams.
    await waitFor(
      async () =>
        (await app.database.sql`select 1 from remote_access_page_streams where lease_id = ${lease!.id}`)
          .length === 2,
      10_000,
      "both tabs' streams",
    );
    expect((await openLeases(device.id)).map((l) => l.id)).toEqual([lease!.id]);

    await first.close();
    await Bun.sleep(5000); // well past the 2 s grace period
    expect((await openLeases(device.id)).map((l) => l.id)).toEqual([lease!.id]);
    // The open tab's panel still shows the lease (its live stream refreshes it every 3 s).
    await Bun.sleep(3500);
    const held = await second.locator("[data-remote-panel] dl.facts").textContent();
    expect(held).not.toContain("nobody");
    expect(held).toContain("console");

    await second.close();
    await waitFor(async () => (await openLeases(device.id)).length === 0, 20_000, "the lease to end");
    await context.close();
  }, 60_000);

  test("viewers and offline devices open no lease", async () => {
    const device = await onlineDevice(app);
    const viewer = await signedIn(browser, app, "viewer", LAPTOP);
    const page = await viewer.newPage();
    await page.goto(`${app.url}/devices/${device.id}`);
    await Bun.sleep(1000);
    expect(await openLeases(device.id)).toHaveLength(0);
    await viewer.close();

    const offline = await approvedDevice(app);
    const operator = await signedIn(browser, app, "operator", LAPTOP);
    const operatorPage = await operator.newPage();
    await operatorPage.goto(`${app.url}/devices/${offline.id}`);
    await Bun.sleep(1000);
    expect(await openLeases(offline.id)).toHaveLength(0);
    await operator.close();
  }, 30_000);
});
