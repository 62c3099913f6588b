/**
 * Device sightings (modules/devices/sightings.ts): every heartbeat batch records which devices it
 * accepted at the moment it wrote to their last_seen_at; the online filter reads them, the prune job
 * keeps each device's latest. The last-seen order read from them: sightings-order.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import sightingsPrune from "../../jobs/device-sightings-prune";
import { consoleFilters, countMatchingDevices, listConsoleDevices } from "../../modules/devices/queries";
import { approveDevices, deleteDevice, listDevices } from "../../modules/devices/service";
import {
  pruneSightings,
  SIGHTINGS_READ_MAX,
  SIGHTINGS_RETENTION_SECONDS,
} from "../../modules/devices/sightings";
import { markSeen } from "../helpers/seen";
import { approvedDevice, heartbeatUrl, json, register, sampleHeartbeat } from "./helpers";
import { sightingsFleet, WINDOW } from "./sightings-fixture";

const { app, sql, devices, beat, expectedOrder, options, walk } = await sightingsFleet();

describe("recording", () => {
  test("a batch's sighting holds exactly the devices it accepted, at their last_seen_at", async () => {
    const [device] = devices;
    const wrong = { ...devices[1]!, token: "not-the-token" };
    await Promise.all([
      beat(device!),
      app.fetch(heartbeatUrl(wrong.id, wrong.token), json(sampleHeartbeat())),
    ]);
    const rows = await sql<{ ok: boolean; others: string[] }[]>`
      select d.last_seen_at = s.seen_at as ok,
        array(select unnest(s.device_ids) except select ${device!.id}::uuid)::text[] as others
      from devices d join device_sightings s on s.seen_at = d.last_seen_at and d.id = any(s.device_ids)
      where d.id = ${device!.id}`;
    expect([...rows]).toEqual([{ ok: true, others: [] }]);
    // The refused heartbeat left no sighting of its device at its (older) last_seen_at or later.
    const [refused] = await sql<{ n: number }[]>`
      select count(*)::int as n from device_sightings s join devices d on d.id = ${wrong.id}
      where ${wrong.id}::uuid = any(s.device_ids) and s.seen_at > d.last_seen_at`;
    expect(refused!.n).toBe(0);
  });

  test("a batch that accepted nothing records no sighting", async () => {
    const [before] = await sql<{ n: number }[]>`select count(*)::int as n from device_sightings`;
    const pending = await register(app);
    const response = await app.fetch(heartbeatUrl(pending.body.data.id, "no-token"), json(sampleHeartbeat()));
    expect(response.status).toBe(403); // pending: refused
    const [after] = await sql<{ n: number }[]>`select count(*)::int as n from device_sightings`;
    expect(after!.n).toBe(before!.n);
  });
});
describe("the online filter", () => {
  test("asks the sightings only for the online filter, and only while at most SIGHTINGS_READ_MAX are in the window", async () => {
    for (const connectivityStatus of [undefined, "offline"] as const)
      expect(
        (await consoleFilters(sql, { onlineWindowSeconds: WINDOW, connectivityStatus })).sightedOnly,
      ).toBe(false);
    const online = { onlineWindowSeconds: WINDOW, connectivityStatus: "online" as const };
    const [row] = await sql<{ n: number }[]>`
      select (select coalesce(sum(cardinality(device_ids)), 0) from device_sightings
        where seen_at >= now() - make_interval(secs => ${WINDOW}))::int
      + (select count(*) from device_last_sightings where seen_at >= now() - make_interval(secs => ${WINDOW}))::int as n`;
    // Ids of no device: they change how many sightings there are, not which devices match.
    const flooded: string[] = [];
    const flood = async (n: number) => {
      const [at] = await sql<{ at: string }[]>`insert into device_sightings (seen_at, device_ids)
        select now() - interval '1 second', array_agg(gen_random_uuid()) from generate_series(1, ${n})
        returning seen_at::text as at`;
      flooded.push(at!.at);
    };
    try {
      await flood(SIGHTINGS_READ_MAX - row!.n);
      expect((await consoleFilters(sql, online)).sightedOnly).toBe(true); // exactly the limit
      await flood(1);
      const many = await consoleFilters(sql, online);
      expect(many.sightedOnly).toBe(false);
      // Found among every device row then, with the same answer.
      const expected = await expectedOrder(sql`d.last_seen_at >= now() - make_interval(secs => ${WINDOW})`);
      expect(
        (await listConsoleDevices(sql, { ...options(many), limit: 200 })).devices.map((d) => d.id),
      ).toEqual(expected);
    } finally {
      for (const at of flooded)
        await sql`delete from device_sightings where seen_at = ${at}::timestamptz and not exists (
          select 1 from devices d where d.id = any(device_ids))`;
    }
  });

  test("with few devices online it narrows to the sighted ones, and counts them", async () => {
    const filters = await consoleFilters(sql, { onlineWindowSeconds: WINDOW, connectivityStatus: "online" });
    expect(filters.sightedOnly).toBe(true);
    const online = await expectedOrder(sql`d.last_seen_at >= now() - make_interval(secs => ${WINDOW})`);
    const page = await listConsoleDevices(sql, { ...options(filters), limit: 200 });
    expect(page.devices.map((d) => d.id)).toEqual(online);
    expect(await countMatchingDevices(sql, filters)).toEqual({ count: online.length, more: false });
    const created = await listConsoleDevices(sql, { ...options(filters), sort: "created_at", limit: 200 });
    expect(new Set(created.devices.map((d) => d.id))).toEqual(new Set(online));
    // An unsighted device online (last_seen_at written by hand) is not found: the sightings were read.
    const pending = await register(app);
    await approveDevices(sql, [pending.body.data.id]);
    await sql`update devices set last_seen_at = now() where id = ${pending.body.data.id}`;
    expect(await countMatchingDevices(sql, filters)).toEqual({ count: online.length, more: false });
    // The JSON API's list filters the same way.
    const api = await listDevices(sql, { ...filters, limit: 500 });
    expect(new Set(api.devices.map((d) => d.id))).toEqual(new Set(online));
    await markSeen(sql, pending.body.data.id, null);
  });
  test("an online window longer than the retention finds the devices seen in it from their kept sightings", async () => {
    const hour = await consoleFilters(sql, { onlineWindowSeconds: 3600, connectivityStatus: "online" });
    expect(hour.sightedOnly).toBe(true);
    const device = await approvedDevice(app); // no sighting of its own but this one
    await markSeen(sql, device.id, SIGHTINGS_RETENTION_SECONDS + 300);
    await pruneSightings(sql);
    try {
      const page = await listConsoleDevices(sql, { ...options(hour), limit: 200 });
      expect(page.devices.map((d) => d.id)).toContain(device.id);
      const expected = await expectedOrder(sql`d.last_seen_at >= now() - interval '1 hour'`);
      expect(page.devices.map((d) => d.id)).toEqual(expected);
      expect(await countMatchingDevices(sql, hour)).toEqual({ count: expected.length, more: false });
    } finally {
      await beat(device);
    }
  });
});

describe("pruning", () => {
  test("deletes sightings past the retention and keeps each device's latest of them", async () => {
    const [silent, back] = [await approvedDevice(app), await approvedDevice(app)];
    await markSeen(sql, silent.id, SIGHTINGS_RETENTION_SECONDS + 30);
    await markSeen(sql, back.id, SIGHTINGS_RETENTION_SECONDS + 30);
    await beat(back); // seen again since: its aged sighting is not its latest
    await sql`insert into device_sightings (seen_at, device_ids) values
      (now() - make_interval(secs => ${SIGHTINGS_RETENTION_SECONDS + 1}), array[gen_random_uuid()])`;
    const [before] = await sql<{ n: number }[]>`
      select count(*)::int as n from device_sightings
      where seen_at >= now() - make_interval(secs => ${SIGHTINGS_RETENTION_SECONDS})`;
    const { pruned, kept } = await pruneSightings(sql);
    expect(pruned).toBeGreaterThanOrEqual(3);
    expect(kept).toBeGreaterThanOrEqual(1);
    const [after] = await sql<{ n: number; old: number }[]>`
      select count(*)::int as n,
        count(*) filter (where seen_at < now() - make_interval(secs => ${SIGHTINGS_RETENTION_SECONDS}))::int as old
      from device_sightings`;
    expect(after).toEqual({ n: before!.n, old: 0 });
    const lastOf = async (id: string) =>
      (
        await sql<{ ok: boolean }[]>`
        select l.seen_at = d.last_seen_at as ok from device_last_sightings l join devices d on d.id = l.device_id
        where l.device_id = ${id}`
      ).map((row) => row.ok);
    expect(await lastOf(silent.id)).toEqual([true]);
    expect(await lastOf(back.id)).toEqual([]);
    expect(await pruneSightings(sql)).toEqual({ pruned: 0, kept: 0 });
    await beat(silent);
  });

  test("the device_sightings_prune job prunes", async () => {
    const device = await approvedDevice(app);
    await markSeen(sql, device.id, SIGHTINGS_RETENTION_SECONDS + 30);
    await sightingsPrune.run({}, app.services);
    const [row] = await sql<{ recent: number; kept: number }[]>`
      select (select count(*) from device_sightings where ${device.id}::uuid = any(device_ids))::int as recent,
        (select count(*) from device_last_sightings where device_id = ${device.id})::int as kept`;
    expect(row).toEqual({ recent: 0, kept: 1 });
  });

  test("a device's kept sighting goes with the device", async () => {
    const device = await approvedDevice(app);
    await markSeen(sql, device.id, SIGHTINGS_RETENTION_SECONDS + 30);
    await pruneSightings(sql);
    await deleteDevice(sql, device.id);
    const rows = await sql`select 1 from device_last_sightings where device_id = ${device.id}`;
    expect(rows).toHaveLength(0);
  });
});

describe("the upgrade (migration 0020)", () => {
  test("gives every device ever seen its latest sighting", async () => {
    const migration = readFileSync(
      path.join(import.meta.dir, "../../migrations/0020_device_sightings.sql"),
      "utf8",
    );
    const backfill = migration.split("--> statement-breakpoint").find((part) => /INSERT INTO/.test(part));
    await markSeen(sql, devices[0]!.id, 60);
    await markSeen(sql, devices[1]!.id, 86_400);
    await sql`truncate device_sightings, device_last_sightings`;
    await sql.unsafe(backfill!);
    const unsighted = await sql<{ id: string }[]>`
      select d.id from devices d
      where d.last_seen_at is not null and not exists (
        select 1 from device_last_sightings l where l.device_id = d.id and l.seen_at = d.last_seen_at)`;
    expect([...unsighted]).toEqual([]);
    expect((await walk()).ids).toEqual(await expectedOrder());
  });
});
