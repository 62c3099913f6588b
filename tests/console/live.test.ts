// Live updates: what the database announces, and how a burst is coalesced before it reaches browsers.
import { describe, expect, test } from "bun:test";
import { type LiveClient, liveHubFor, THROTTLE_MS } from "../../modules/live/hub";
import { createLogger } from "../../modules/platform/logger";
import { startTestApp } from "../helpers/app";
import {
  agentHeartbeat,
  approve,
  approvedDevice,
  heartbeat,
  notificationsDuring,
  registerDevice,
} from "./helpers";

const app = await startTestApp();

describe("live updates", () => {
  test("registrations and approvals notify once per transaction; routine heartbeats never do", async () => {
    const device = await approvedDevice(app, { product_name: "live-check" });
    const first = await notificationsDuring(app, async () =>
      heartbeat(app, device, await agentHeartbeat({ cpu: 1, memory: 2, disk: 3 })).then(() => {}),
    );
    expect(first).toEqual(["devices"]); // first heartbeat: the device turns online
    const routine = await notificationsDuring(app, async () => {
      for (let i = 0; i < 20; i++)
        await heartbeat(app, device, await agentHeartbeat({ cpu: i, memory: 2, disk: 3 }));
    });
    expect(routine).toEqual([]);
    const ids: string[] = [];
    const registered = await notificationsDuring(app, async () => {
      for (let i = 0; i < 3; i++) ids.push((await registerDevice(app)).id);
    });
    expect(registered).toEqual(["devices", "devices", "devices"]);
    const bulk = await notificationsDuring(app, () => approve(app, ids));
    expect(bulk).toEqual(["devices"]); // three rows, one transaction, one notification
  }, 30_000);

  test("a burst of notifications becomes one fleet event with fresh counts per instance", async () => {
    const hub = liveHubFor({
      database: app.database,
      logger: createLogger("silent"),
      onlineWindowSeconds: async () => 300,
    });
    const events: { event: string; data: string }[] = [];
    const client: LiveClient = {
      send: (event, data) => events.push({ event, data }),
      comment: () => {},
      close: () => {},
    };
    const unsubscribe = hub.subscribe(client);
    // Once LISTEN is set up, the first browser gets a fresh count (nothing committed meanwhile is missed).
    for (let i = 0; i < 100 && !events.some((e) => e.event === "fleet"); i++) await Bun.sleep(20);
    expect(events.filter((e) => e.event === "fleet").length).toBe(1);
    events.length = 0;
    for (let i = 0; i < 500; i++) hub.onNotify("devices");
    await Bun.sleep(THROTTLE_MS + 500);
    unsubscribe();
    const fleet = events.filter((e) => e.event === "fleet");
    expect(fleet.length).toBe(1);
    const counts = JSON.parse(fleet[0]!.data);
    const [row] = await app.database.sql<{ n: number }[]>`select count(*)::int as n from devices`;
    expect(counts.total).toBe(row!.n);
  }, 30_000);
});
