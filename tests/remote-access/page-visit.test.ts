// Spec, remote access step 1: an operator opening the device view (any tab) while the device is online
// requests remote access. Moving between the page's tabs keeps one lease (the next page takes it over);
// leaving the device ends it; viewers and offline devices open none.
import { afterAll, describe, expect, test } from "bun:test";
import { signedIn } from "../console/helpers";
import { approvedDevice, onlineDevice } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser } from "../helpers/browser";
import { waitFor } from "./helpers";

const app = await startTestApp({ BASE_DOMAIN: "visit.test" });
const browser = await launchBrowser();
afterAll(() => browser.close());
/** How long a closed page's lease waits for another page to take it over (the default, 10 s). */
const GRACE_MS = app.config.remoteAccessPageGraceSeconds * 1000;

async function openLeases(deviceId: string) {
  return app.database.sql<{ id: string; owner_kind: string }[]>`
    select id, owner_kind from remote_access_leases
    where device_id = ${deviceId} and ended_at is null and expires_at > now()`;
}

const streamIds = async (leaseId: string) =>
  (
    await app.database.sql<{ id: string }[]>`
      select id from remote_access_page_streams where lease_id = ${leaseId}`
  ).map((row) => row.id);

/** Moves the app's clock past the grace period until `done` (each step fires the grace timers armed by then). */
async function pastGraceUntil(done: () => Promise<boolean>, what: string) {
  await waitFor(
    async () => {
      await app.clock.advance(GRACE_MS);
      return done();
    },
    20_000,
    what,
  );
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

    // The page's live stream opens after its panel answered: wait for it, or the check below could take
    // this page's own late stream for the next page's (and the lease would end under the next page).
    await waitFor(async () => (await streamIds(first!.id)).length === 1, 10_000, "the page's stream");
    const firstStreams = await streamIds(first!.id);
    const armed = app.clock.armed(GRACE_MS);
    await page.click('nav.tabs a:has-text("Commands")');
    await page.waitForURL(/tab=commands/);
    // The closed page armed its grace timer and the next page holds the lease with its own stream…
    await waitFor(
      async () =>
        app.clock.armed(GRACE_MS) > armed &&
        (await streamIds(first!.id)).some((id) => !firstStreams.includes(id)),
      10_000,
      "the grace timer and the next page's stream",
    );
    // …so past the grace period the lease is still the first page's.
    await app.clock.advance(GRACE_MS);
    const after = await openLeases(device.id);
    expect(after.map((l) => l.id)).toEqual([first!.id]);

    const beforeReload = await streamIds(first!.id);
    await page.reload();
    // The reloaded page holds the lease with its own stream before it leaves: a panel request still on
    // its way when the lease ended would open a new lease.
    await waitFor(
      async () => (await streamIds(first!.id)).some((id) => !beforeReload.includes(id)),
      10_000,
      "the reloaded page's stream",
    );
    await page.goto(`${app.url}/devices`);
    await pastGraceUntil(async () => (await openLeases(device.id)).length === 0, "the lease to end");
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

    const armed = app.clock.armed(GRACE_MS);
    await first.close();
    await waitFor(
      async () => (await streamIds(lease!.id)).length === 1 && app.clock.armed(GRACE_MS) > armed,
      10_000,
      "the closed tab's grace timer",
    );
    await app.clock.advance(GRACE_MS);
    expect((await openLeases(device.id)).map((l) => l.id)).toEqual([lease!.id]);
    // The open tab's panel still shows the lease after its live stream's next refresh (every 3 s): the
    // panel it shows now is marked, and the refresh replaces it.
    await second.locator("[data-remote-panel]").evaluate((panel) => panel.setAttribute("data-before", ""));
    await app.clock.advance(3000);
    await second.locator("[data-remote-panel]:not([data-before])").waitFor({ timeout: 10_000 });
    const held = await second.locator("[data-remote-panel] dl.facts").textContent();
    expect(held).not.toContain("nobody");
    expect(held).toContain("console");

    await second.close();
    await pastGraceUntil(async () => (await openLeases(device.id)).length === 0, "the lease to end");
    await context.close();
  }, 60_000);

  test("viewers and offline devices open no lease", async () => {
    /**
     * Opens the device's overview (no lease keeper on it for viewers or offline devices) and its
     * Remote access tab, once that tab's panel request has been answered: whatever it would open is open.
     */
    async function visit(role: "viewer" | "operator", deviceId: string) {
      const context = await signedIn(browser, app, role, LAPTOP);
      const page = await context.newPage();
      await page.goto(`${app.url}/devices/${deviceId}`);
      expect(await page.locator("#remote-access").count()).toBe(0);
      const panel = page.waitForResponse((r) => r.url().endsWith("/remote-access/panel"), {
        timeout: 10_000,
      });
      await page.goto(`${app.url}/devices/${deviceId}?tab=remote`);
      expect((await panel).status()).toBe(200);
      expect(await openLeases(deviceId)).toHaveLength(0);
      await context.close();
    }
    await visit("viewer", (await onlineDevice(app)).id);
    await visit("operator", (await approvedDevice(app)).id);
  }, 30_000);
});
