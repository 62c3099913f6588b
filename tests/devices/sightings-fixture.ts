/**
 * The fleet the sightings tests share: twelve approved devices (product "odd" or "even"), beaten in
 * three rounds so that devices have older sightings too, and the reference each page is checked
 * against (plain SQL over the devices table).
 */
import { afterAll, beforeAll, expect } from "bun:test";
import { type ConsoleListOptions, listConsoleDevices } from "../../modules/devices/queries";
import { startTestApp } from "../helpers/app";
import { approvedDevice, heartbeatUrl, json, sampleHeartbeat } from "./helpers";

export const WINDOW = 300;

/** Starts a test app with the fleet (in beforeAll) and stops it after all. */
export async function sightingsFleet() {
  const app = await startTestApp();
  const sql = app.database.sql;
  type Device = Awaited<ReturnType<typeof approvedDevice>>;
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

  return { app, sql, devices, beat, expectedOrder, options, walk };
}
