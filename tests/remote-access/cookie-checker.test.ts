// The tunnel's per-device access gate at the service: a signed access cookie opens its own device's web
// UI only while the lease it was issued under is active. Both cases below slipped past every HTTP test
// (the mutation review of #51): a lease past its expiry that the 30 s sweep has not ended yet, and the
// 2 s per-lease cache answering for another device after the cookie was used on its own.
import { describe, expect, test } from "bun:test";
import { CookieChecker } from "../../modules/remote-access/tickets";
import { signCredential } from "../../modules/remote-access/token";
import { createTestDatabase } from "../helpers/database";

const database = await createTestDatabase();
const { sql } = database;
const SECRET = "cookie-checker-test-secret-0123456789abcdef";

let macs = 0;
async function approvedDevice(): Promise<string> {
  macs += 1;
  const mac = `02:00:00:00:c0:${macs.toString(16).padStart(2, "0")}`;
  const [row] = await sql<{ id: string }[]>`
    insert into devices (mac_address, approval_status) values (${mac}, 'approved') returning id::text`;
  return row!.id;
}

/** A lease row as openLease writes it, with its expiry `expiresIn` seconds from now (negative: past). */
async function lease(deviceId: string, expiresIn: number): Promise<string> {
  const id = Bun.randomUUIDv7();
  await sql`insert into remote_access_leases (id, device_id, owner_kind, holder, expires_at, max_expires_at)
    values (${id}, ${deviceId}::uuid, 'api', 'cookie-checker-test',
      now() + make_interval(secs => ${expiresIn}::int), now() + interval '1 hour')`;
  return id;
}

/** A clock the test moves past the checker's 2 s cache instead of sleeping. */
function manualClock() {
  let at = Date.now();
  return { now: () => at, advance: (ms: number) => (at += ms) };
}

function cookieFor(deviceId: string, leaseId: string): string {
  return signCredential(SECRET, "cookie", {
    d: deviceId,
    l: leaseId,
    exp: Math.floor(Date.now() / 1000) + 3600,
  });
}

describe("CookieChecker.allows", () => {
  test("a cookie of an active lease opens its own device", async () => {
    const device = await approvedDevice();
    const checker = new CookieChecker(sql, SECRET);
    expect(await checker.allows(cookieFor(device, await lease(device, 120)), device)).toBe(true);
  });

  test("a lease past its expiry but not yet swept (ended_at still null) opens nothing", async () => {
    const device = await approvedDevice();
    const leaseId = await lease(device, -1);
    const [row] = await sql<
      { ended_at: Date | null }[]
    >`select ended_at from remote_access_leases where id = ${leaseId}`;
    expect(row!.ended_at).toBeNull();
    expect(await new CookieChecker(sql, SECRET).allows(cookieFor(device, leaseId), device)).toBe(false);
  });

  test("device A's cookie, once used on A (and cached), still does not open device B", async () => {
    const deviceA = await approvedDevice();
    const deviceB = await approvedDevice();
    const leaseA = await lease(deviceA, 120);
    await lease(deviceB, 120);
    const checker = new CookieChecker(sql, SECRET);
    const cookieA = cookieFor(deviceA, leaseA);
    expect(await checker.allows(cookieA, deviceA)).toBe(true);
    expect(await checker.allows(cookieA, deviceB)).toBe(false);
  });

  test("a cookie naming B's lease but signed for A opens neither B nor A", async () => {
    const deviceA = await approvedDevice();
    const deviceB = await approvedDevice();
    const leaseB = await lease(deviceB, 120);
    const checker = new CookieChecker(sql, SECRET);
    const forged = cookieFor(deviceA, leaseB);
    expect(await checker.allows(forged, deviceA)).toBe(false);
    expect(await checker.allows(forged, deviceB)).toBe(false);
  });

  test("a cookie signed with another key, of another kind or absent opens nothing", async () => {
    const device = await approvedDevice();
    const leaseId = await lease(device, 120);
    const checker = new CookieChecker(sql, SECRET);
    const claims = { d: device, l: leaseId, exp: Math.floor(Date.now() / 1000) + 3600 };
    expect(
      await checker.allows(signCredential("another-secret-key-0123456789abcdef", "cookie", claims), device),
    ).toBe(false);
    expect(await checker.allows(signCredential(SECRET, "tunnel", claims), device)).toBe(false);
    expect(await checker.allows(undefined, device)).toBe(false);
    expect(
      await checker.allows(signCredential(SECRET, "cookie", { ...claims, l: "not-a-uuid" }), device),
    ).toBe(false);
  });

  // The two ways a lease stops counting; either is honoured at the first check after the 2 s cache.
  const ENDINGS = {
    expires: (id: string) =>
      sql`update remote_access_leases set expires_at = now() - interval '1 second' where id = ${id}`,
    ends: (id: string) =>
      sql`update remote_access_leases set ended_at = now(), end_reason = 'closed' where id = ${id}`,
  };
  for (const [how, end] of Object.entries(ENDINGS)) {
    test(`a lease that ${how} is refused at the first check after the cache's 2 s`, async () => {
      const device = await approvedDevice();
      const leaseId = await lease(device, 120);
      const clock = manualClock();
      const checker = new CookieChecker(sql, SECRET, clock.now);
      const cookie = cookieFor(device, leaseId);
      expect(await checker.allows(cookie, device)).toBe(true);
      await end(leaseId);
      expect(await checker.allows(cookie, device)).toBe(true); // within the cache's 2 s
      clock.advance(2001);
      expect(await checker.allows(cookie, device)).toBe(false);
    });
  }
});
