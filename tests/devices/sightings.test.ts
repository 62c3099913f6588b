/**
 * Device sightings (modules/devices/sightings.ts): every heartbeat batch records which devices it
 * accepted at the moment it wrote to their last_seen_at, and the device list reads them for the
 * newest-first last-seen order and the online filter. Pages read that way must be exactly the pages
 * the full read gives: checked against plain SQL over the devices table, page by page, both ways.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import sightingsPrune from "../../jobs/device-sightings-prune";
import {
  type ConsoleListOptions,
  consoleFilters,
  countMatchingDevices,
  listConsoleDevices,
} from "../../modules/devices/queries";
import { approveDevices, deleteDevice, listDevices } from "../../modules/devices/service";
import {
  pruneSightings,
  SIGHTINGS_READ_MAX,
  SIGHTINGS_RETENTION_SECONDS,
} from "../../modules/devices/sightings";
import { createLogger } from "../../modules/platform/logger";
import { startTestApp } from "../helpers/app";
import { markSeen } from "../helpers/seen";
import { approvedDevice, heartbeatUrl, json, register, sampleHeartbeat } from "./helpers";

const app = await startTestApp();
const sql = app.database.sql;
type Device = Awaited<ReturnType<typeof approvedDevice>>;
const WINDOW = 300;
const devices: Device[] = [];

async function beat(device: Device) {
  const response = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
  expect(response.status).toBe(200);
}

/**
 * The last-seen order read straight from the devices table: what every page must match. Devices
 * never seen come last, oldest first too.
 */
async function expectedOrder(where = sql`true`, order: "asc" | "desc" = "desc") {
  const rows = await sql<{ id: string }[]>`
    select id from devices d where ${where}
    order by ${
      order === "desc"
        ? sql`coalesce(last_seen_at, '-infinity') desc, id desc`
        : sql`coalesce(last_seen_at, 'infinity') asc, id asc`
    }`;
  return rows.map((row) => row.id);
}

function options(extra: Partial<ConsoleListOptions> = {}): ConsoleListOptions {
  return {
    onlineWindowSeconds: WINDOW,
    sightedOnly: false,
    sort: "last_seen_at",
    order: "desc",
    limit: 3,
    ...extra,
  };
}

/** Every page Next from the first, then Previous back: the ids in order, and the pages' own. */
async function walk(extra: Partial<ConsoleListOptions> = {}) {
  const pages: string[][] = [];
  let page = await listConsoleDevices(sql, options(extra));
  pages.push(page.devices.map((d) => d.id));
  while (page.next) {
    page = await listConsoleDevices(sql, options({ ...extra, after: page.next }));
    pages.push(page.devices.map((d) => d.id));
  }
  const back: string[][] = [];
  while (page.prev) {
    page = await listConsoleDevices(sql, options({ ...extra, before: page.prev }));
    back.unshift(page.devices.map((d) => d.id));
  }
  return { ids: pages.flat(), pages, back };
}

beforeAll(async () => {
  for (let i = 0; i < 12; i++)
    devices.push(await approvedDevice(app, { product_name: i % 2 ? "odd" : "even" }));
  // In three rounds, so devices have older sightings too (only the latest one may count).
  for (const round of [devices, devices.slice(4), devices.slice(8)])
    for (const device of round) await beat(device);
});

afterAll(() => app.stop());

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

describe("the last-seen order read from the sightings", () => {
  test("every page, Next and Previous, is the page the devices table gives", async () => {
    const expected = await expectedOrder();
    const { ids, pages, back } = await walk();
    expect(ids).toEqual(expected);
    expect(back).toEqual(pages.slice(0, -1));
    const odd = await walk({ product: "odd" });
    expect(odd.ids).toEqual(await expectedOrder(sql`d.product_name = 'odd'`));
    for (const limit of [1, 2, 3]) {
      const oldest = await walk({ order: "asc", limit });
      expect(oldest.ids).toEqual(await expectedOrder(sql`true`, "asc"));
      expect(oldest.back).toEqual(oldest.pages.slice(0, -1));
    }
  });

  test("oldest first, a silent fleet's first page comes from the kept sightings; devices never seen come last", async () => {
    for (const [i, device] of devices.entries()) await markSeen(sql, device.id, 3600 + i);
    await pruneSightings(sql);
    // A device seen before all of them, by a hand-written last_seen_at: the sightings do not know it.
    const [unsighted] = await sql<{ id: string }[]>`
      update devices set last_seen_at = now() - interval '1 day' where id = ${devices[0]!.id} returning id`;
    try {
      const page = await listConsoleDevices(sql, options({ order: "asc" }));
      expect(page.devices.map((d) => d.id)).toEqual(
        devices
          .slice(-3)
          .reverse()
          .map((d) => d.id),
      );
      expect(page.devices.map((d) => d.id)).not.toContain(unsighted!.id);
      const all = await listConsoleDevices(sql, options({ order: "asc", limit: 200 }));
      expect(all.devices.at(-1)!.lastSeenAt).toBeNull();
    } finally {
      for (const device of devices) await beat(device);
    }
  });

  test("pages of devices never seen, and Previous from them, hold every one of them, both orders", async () => {
    // More devices never seen than fit on a page: they have no sighting, so no page among them may
    // be read from the sightings, Previous from one of them included.
    const silent = [];
    for (let i = 0; i < 5; i++) silent.push(await approvedDevice(app));
    try {
      for (const order of ["desc", "asc"] as const) {
        const { ids, pages, back } = await walk({ order, limit: 2 });
        expect(ids).toEqual(await expectedOrder(sql`true`, order));
        expect(back).toEqual(pages.slice(0, -1));
      }
    } finally {
      await sql`delete from devices where id = any(${silent.map((d) => d.id)}::uuid[])`;
    }
  });

  test("a full newest-first page comes from the sightings, not from every device row", async () => {
    // A device seen without a sighting (only possible by writing last_seen_at by hand) is missing
    // from a full page read from the sightings: that proves which read made the page.
    const [unsighted] = await sql<{ id: string }[]>`
      update devices set last_seen_at = now() + interval '1 minute' where id = ${devices[11]!.id}
      returning id`;
    try {
      const page = await listConsoleDevices(sql, options());
      expect(page.devices.map((d) => d.id)).not.toContain(unsighted!.id);
      expect(page.devices).toHaveLength(3);
      // A short page (fewer sighted devices match than fit) reads the devices table: it is there.
      const wide = await listConsoleDevices(sql, options({ limit: 200 }));
      expect(wide.devices[0]!.id).toBe(unsighted!.id);
    } finally {
      await beat(devices[11]!);
    }
  });

  test("pages after a cursor and Previous, both orders, come from the sightings, also when the read is full", async () => {
    // As above: a device seen without a sighting is missing from a page read from the sightings. Put
    // where the devices table would show it first on the second page.
    const readFromSightings = async (order: "asc" | "desc") => {
      const first = await listConsoleDevices(sql, options({ order }));
      // The last of the fleet in this order, moved to just after the first page.
      const ours = new Set(devices.map((d) => d.id));
      const last = (await expectedOrder(sql`true`, order)).findLast((id) => ours.has(id))!;
      const edge = first.devices.at(-1)!.lastSeenAt!.toISOString();
      await sql`update devices set last_seen_at = ${edge}::timestamptz
        ${sql.unsafe(order === "desc" ? "-" : "+")} interval '1 millisecond' where id = ${last}`;
      try {
        const second = await listConsoleDevices(sql, options({ order, after: first.next }));
        expect(second.devices).toHaveLength(3);
        expect(second.devices.map((d) => d.id)).not.toContain(last);
        // Previous back to the first page (short: nothing before it) is complete from the sightings.
        const back = await listConsoleDevices(sql, options({ order, before: second.prev }));
        expect(back.devices.map((d) => d.id)).toEqual(first.devices.map((d) => d.id));
      } finally {
        await beat(devices.find((d) => d.id === last)!);
      }
    };
    for (const order of ["desc", "asc"] as const) await readFromSightings(order);
    // With the read at its limit (older sightings of no device newest first, newer ones oldest first):
    // the page ends strictly inside what was read, so it is still taken from the sightings.
    for (const [order, offset] of [
      ["desc", "- interval '2 hours'"],
      ["asc", "+ interval '2 hours'"],
    ] as const) {
      await sql`insert into device_sightings (seen_at, device_ids)
        select now() ${sql.unsafe(offset)}, array_agg(gen_random_uuid()) from generate_series(1, ${SIGHTINGS_READ_MAX})`;
      try {
        await readFromSightings(order);
      } finally {
        await sql`delete from device_sightings where cardinality(device_ids) = ${SIGHTINGS_READ_MAX}`;
      }
    }
  });

  test("a page past what the read may take (SIGHTINGS_READ_MAX) is read from the devices table", async () => {
    // A flood of newer sightings of devices that do not exist fills the read; the page must still be right.
    await sql`insert into device_sightings (seen_at, device_ids)
      select now() + interval '1 hour', array_agg(gen_random_uuid()) from generate_series(1, ${SIGHTINGS_READ_MAX})`;
    try {
      const { ids } = await walk();
      expect(ids).toEqual(await expectedOrder());
    } finally {
      await sql`delete from device_sightings where seen_at > now() + interval '30 minutes'`;
    }
  });

  test("devices silent past the retention are ordered by the latest sighting kept for them, both ways", async () => {
    // Two devices last seen before the retention: pruning keeps their latest sightings only.
    const [older, newer] = [devices[5]!, devices[6]!];
    await markSeen(sql, older.id, SIGHTINGS_RETENTION_SECONDS + 120);
    await markSeen(sql, newer.id, SIGHTINGS_RETENTION_SECONDS + 60);
    await pruneSightings(sql);
    try {
      for (const limit of [1, 2, 3]) {
        const { ids, pages, back } = await walk({ limit });
        expect(ids).toEqual(await expectedOrder());
        expect(back).toEqual(pages.slice(0, -1));
      }
    } finally {
      await beat(older);
      await beat(newer);
    }
  });

  test("a silent fleet's newest-first page comes from the kept sightings", async () => {
    // Everyone last seen over an hour ago (kept sightings only), then one device's last_seen_at
    // written by hand, newer than all: a page read from the sightings does not know it.
    for (const [i, device] of devices.entries()) await markSeen(sql, device.id, 3600 + i);
    await pruneSightings(sql);
    const [unsighted] = await sql<{ id: string }[]>`
      update devices set last_seen_at = now() - interval '30 minutes' where id = ${devices[11]!.id}
      returning id`;
    try {
      const page = await listConsoleDevices(sql, options());
      expect(page.devices).toHaveLength(3);
      expect(page.devices.map((d) => d.id)).toEqual(devices.slice(0, 3).map((d) => d.id));
      expect(page.devices.map((d) => d.id)).not.toContain(unsighted!.id);
    } finally {
      for (const device of devices) await beat(device);
    }
  });

  test("devices seen at the same moment as the last sighting read are not trusted to it", async () => {
    // The read stops inside a batch of three devices seen at one moment: it took the two with the
    // smaller ids, but the third (largest id) comes first in the order: the page must hold it.
    const [x, y, ...batch] = devices.slice(0, 5).map((d) => d.id);
    const sorted = [...batch].sort();
    // One timestamp per sighting, written to last_seen_at as well: the invariant the heartbeat keeps.
    const [at] = await sql<{ x: string; y: string; batch: string }[]>`
      select (now() + interval '30 minutes')::text as x, (now() + interval '25 minutes')::text as y,
        (now() + interval '20 minutes')::text as batch`;
    await sql`update devices set last_seen_at = ${at!.x}::timestamptz where id = ${x!}`;
    await sql`update devices set last_seen_at = ${at!.y}::timestamptz where id = ${y!}`;
    await sql`update devices set last_seen_at = ${at!.batch}::timestamptz where id = any(${batch}::uuid[])`;
    await sql`insert into device_sightings (seen_at, device_ids) values (${at!.x}::timestamptz, array[${x!}::uuid]),
      (${at!.y}::timestamptz, array[${y!}::uuid]), (${at!.batch}::timestamptz, ${sorted}::uuid[])`;
    await sql`insert into device_sightings (seen_at, device_ids)
      select now() + interval '1 hour', array_agg(gen_random_uuid()) from generate_series(1, ${SIGHTINGS_READ_MAX - 4})`;
    try {
      // The read ends after x, y and the batch's first two: only x and y are certain.
      const page = await listConsoleDevices(sql, options({ limit: 3 }));
      expect(page.devices.map((d) => d.id)).toEqual([x!, y!, sorted[2]!]);
      expect((await walk({ limit: 3 })).ids).toEqual(await expectedOrder());
    } finally {
      await sql`delete from device_sightings where seen_at > now() + interval '10 minutes'`;
      for (const device of devices.slice(0, 5)) await beat(device);
    }
  });
  test("Previous past a read cut short by SIGHTINGS_READ_MAX is read from the devices table", async () => {
    // Newest first: a (+30 min), a flood of sightings (+25), c (+22), b (+20). Previous from the
    // page that starts at b reads b, c and the flood's start, but not a: that page must still hold a.
    const [a, c, b] = devices.slice(0, 3).map((d) => d.id);
    const [at] = await sql<{ a: string; c: string; b: string }[]>`
      select (now() + interval '30 minutes')::text as a, (now() + interval '22 minutes')::text as c,
        (now() + interval '20 minutes')::text as b`;
    for (const [id, time] of [
      [a!, at!.a],
      [c!, at!.c],
      [b!, at!.b],
    ] as const) {
      await sql`update devices set last_seen_at = ${time}::timestamptz where id = ${id}`;
      await sql`insert into device_sightings (seen_at, device_ids) values (${time}::timestamptz, array[${id}::uuid])`;
    }
    await sql`insert into device_sightings (seen_at, device_ids)
      select now() + interval '25 minutes', array_agg(gen_random_uuid()) from generate_series(1, ${SIGHTINGS_READ_MAX})`;
    try {
      const first = await listConsoleDevices(sql, options({ limit: 2 }));
      expect(first.devices.map((d) => d.id)).toEqual([a!, c!]);
      const second = await listConsoleDevices(sql, options({ limit: 2, after: first.next }));
      expect(second.devices[0]!.id).toBe(b!);
      const back = await listConsoleDevices(sql, options({ limit: 2, before: second.prev }));
      expect(back.devices.map((d) => d.id)).toEqual([a!, c!]);
    } finally {
      await sql`delete from device_sightings where seen_at > now() + interval '10 minutes'`;
      for (const device of devices.slice(0, 3)) await beat(device);
    }
  });
});

describe("the other sorts", () => {
  test("are not read from the sightings, even when the last-seen order differs from theirs", async () => {
    // Seen in an order unlike creation's (every device sighted, newest first = 5, 10, 3, 8, …).
    for (const [i, device] of devices.entries())
      await markSeen(sql, device.id, 60 + ((i * 5) % devices.length));
    try {
      for (const order of ["asc", "desc"] as const) {
        const created = await sql<{ id: string }[]>`
          select id from devices order by created_at ${sql.unsafe(order)}, id ${sql.unsafe(order)}`;
        const { ids, pages, back } = await walk({ sort: "created_at", order });
        expect(ids).toEqual(created.map((row) => row.id));
        expect(back).toEqual(pages.slice(0, -1));
      }
      expect((await walk()).ids).toEqual(await expectedOrder()); // and last seen still is
    } finally {
      for (const device of devices) await beat(device);
    }
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
    await sightingsPrune.run(
      {},
      { config: app.config, database: app.database, logger: createLogger("silent") },
    );
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
