/**
 * The device list's last-seen order read from the sightings (modules/devices/queries.ts): pages read
 * that way must be exactly the pages the full read gives, checked against plain SQL over the devices
 * table, page by page, both ways.
 */
import { describe, expect, test } from "bun:test";
import { listConsoleDevices } from "../../modules/devices/queries";
import {
  pruneSightings,
  SIGHTINGS_READ_MAX,
  SIGHTINGS_RETENTION_SECONDS,
} from "../../modules/devices/sightings";
import { markSeen } from "../helpers/seen";
import { approvedDevice, register } from "./helpers";
import { sightingsFleet } from "./sightings-fixture";

const { app, sql, devices, beat, expectedOrder, options, walk } = await sightingsFleet();

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
    await register(app); // a device never seen
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
