// Fleet totals and match counts at scale: exact for a small fleet, remembered and refreshed in the
// background for a large one; filtered counts stop at a cap, and the device list says so.
import { describe, expect, test } from "bun:test";
import { FleetCounter, REFRESH_MS } from "../../modules/devices/fleet-counts";
import { countMatchingDevices } from "../../modules/devices/queries";
import { startTestApp } from "../helpers/app";
import { TestClock } from "../helpers/clock";

const app = await startTestApp();
const sql = app.database.sql;
const WINDOW = 300;

async function addDevices(n: number, status: "pending" | "approved", product = "p") {
  await sql`insert into devices (mac_address, product_name, approval_status, metadata)
    select upper(regexp_replace(lpad(to_hex(i + (select count(*) from devices) + 1), 12, '0'), '(..)(?!$)', '\\1:', 'g')),
      ${product}, ${status}::device_approval_status, '{}'::jsonb
    from generate_series(1, ${n}) as i`;
}

describe("fleet counts", () => {
  test("a small fleet is counted exactly on every read", async () => {
    const fleet = new FleetCounter(sql, new TestClock({ frozen: true }));
    await addDevices(3, "pending");
    expect((await fleet.counts(WINDOW)).pending).toBe(3);
    await addDevices(1, "approved");
    const counts = await fleet.counts(WINDOW);
    expect(counts).toEqual({ total: 4, pending: 3, approved: 1, rejected: 0, online: 0, offline: 1 });
  });

  test("a large fleet's counts are served at once and refreshed in the background", async () => {
    const clock = new TestClock({ frozen: true });
    const fleet = new FleetCounter(sql, clock, { exactUpTo: 2, refreshMs: REFRESH_MS });
    await fleet.count(WINDOW);
    await addDevices(2, "pending");
    // Remembered (4 devices is "large" here) and not due: the last counts, no scan.
    await clock.advance(REFRESH_MS - 1);
    expect((await fleet.counts(WINDOW)).total).toBe(4);
    // Due: this read still answers at once with the last counts; the refresh lands for the next.
    await clock.advance(1);
    expect((await fleet.counts(WINDOW)).total).toBe(4);
    // (The refresh is a real query: polled, bounded.)
    for (let i = 0; i < 100 && (await fleet.counts(WINDOW)).total !== 6; i++) await Bun.sleep(20);
    expect((await fleet.counts(WINDOW)).total).toBe(6);
    // Counting afresh (what live updates do) is always exact.
    await addDevices(1, "pending");
    expect((await fleet.count(WINDOW)).total).toBe(7);
    expect((await fleet.counts(WINDOW)).total).toBe(7);
  });

  test("matching devices are counted up to the cap; the list shows 10,000+ beyond it", async () => {
    expect(
      await countMatchingDevices(
        sql,
        { onlineWindowSeconds: WINDOW, approvalStatus: "pending", sightedOnly: false },
        5,
      ),
    ).toEqual({
      count: 5,
      more: true,
    });
    expect(
      await countMatchingDevices(
        sql,
        { onlineWindowSeconds: WINDOW, approvalStatus: "pending", sightedOnly: false },
        6,
      ),
    ).toEqual({
      count: 6,
      more: false,
    });
    await addDevices(10_001, "pending", "bulk");
    const { cookie } = await app.session("viewer");
    const text = async (path: string) => (await app.fetch(path, { headers: { cookie } })).text();
    // A filtered list's page names where its count comes from; that request answers it.
    const page = await text("/devices?product=bulk");
    expect(page).toContain('hx-get="/devices/matching?product=bulk"');
    expect(page).not.toContain("matching of");
    expect(await text("/devices/matching?product=bulk")).toBe("<span>10,000+ matching of 10,008</span>");
    expect(await text("/devices/matching?product=p")).toBe("<span>7 matching of 10,008</span>");
    // Unfiltered, the fleet's own total is known at once: in the page.
    expect(await text("/devices")).toContain("50 shown · <span>10,008 matching</span>");
  });

  test("the count of a query that does not parse, or of a view that is gone, is 0", async () => {
    const { cookie } = await app.session("viewer");
    const text = async (path: string) => (await app.fetch(path, { headers: { cookie } })).text();
    expect(await text(`/devices/matching?q=${encodeURIComponent('tag:"open')}`)).toMatch(/^<span>0 matching/);
    expect(await text(`/devices/matching?view=${crypto.randomUUID()}`)).toMatch(/^<span>0 matching/);
  });

  test("a large view's counts are remembered per view and query, apart from the fleet's", async () => {
    const clock = new TestClock({ frozen: true });
    const fleet = new FleetCounter(sql, clock, { exactUpTo: 2, refreshMs: REFRESH_MS });
    await addDevices(3, "approved", "view-a");
    const viewA = { key: "view:a:product:view-a", where: sql`d.product_name = 'view-a'` };
    expect((await fleet.counts(WINDOW, viewA)).total).toBe(3);
    const fleetTotal = (await fleet.count(WINDOW)).total;
    expect(fleetTotal).toBeGreaterThan(3);
    // Not due: the view's last count, not the fleet's, and no scan (a new device is not in it yet).
    await addDevices(1, "approved", "view-a");
    await clock.advance(REFRESH_MS - 1);
    expect((await fleet.counts(WINDOW, viewA)).total).toBe(3);
    // The same view with an edited query is another key: counted at once.
    const edited = { key: "view:a:product:view-a -status:pending", where: sql`d.product_name = 'view-a'` };
    expect((await fleet.counts(WINDOW, edited)).total).toBe(4);
    // Due: answered at once with the last count, refreshed in the background for the next read.
    await clock.advance(1);
    expect((await fleet.counts(WINDOW, viewA)).total).toBe(3);
    for (let i = 0; i < 100 && (await fleet.counts(WINDOW, viewA)).total !== 4; i++) await Bun.sleep(20);
    expect((await fleet.counts(WINDOW, viewA)).total).toBe(4);
    // A view at most exactUpTo devices is counted exactly on every read.
    const small = { key: "view:small", where: sql`d.product_name = 'nothing-here'` };
    expect((await fleet.counts(WINDOW, small)).total).toBe(0);
  });
});
