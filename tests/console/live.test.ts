// Live updates: what the database announces, and how a burst is coalesced before it reaches browsers.
import { describe, expect, test } from "bun:test";
import { countOpenAlerts } from "../../modules/alerts";
import { FleetCounter } from "../../modules/devices/service";
import { type LiveClient, LiveHub, THROTTLE_MS, TICK_MS } from "../../modules/live/hub";
import { createLogger } from "../../modules/platform/logger";
import { startTestApp } from "../helpers/app";
import { TestClock } from "../helpers/clock";
import { markSeen } from "../helpers/seen";
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

  /** A hub of its own on a test clock, with one browser; `fleet()` are the fleet events it got. */
  async function subscribedHub(onlineWindowSeconds = async () => 300) {
    const clock = new TestClock({ frozen: true });
    const hub = new LiveHub({
      database: app.database,
      logger: createLogger("silent"),
      clock,
      fleetCounts: new FleetCounter(app.database.sql, clock),
      onlineWindowSeconds,
      openAlerts: () => countOpenAlerts(app.database.sql),
    });
    const events: { event: string; data: string }[] = [];
    const client: LiveClient = {
      send: (event, data) => events.push({ event, data }),
      comment: () => {},
      close: () => {},
    };
    hub.subscribe(client);
    const fleet = () => events.filter((e) => e.event === "fleet").map((e) => JSON.parse(e.data));
    // Once LISTEN is set up (a real connection: polled, bounded), the first browser gets a fresh count.
    for (let i = 0; i < 250 && fleet().length === 0; i++) await Bun.sleep(20);
    expect(fleet()).toHaveLength(1);
    const first = fleet()[0];
    events.length = 0;
    return { clock, hub, fleet, first, events };
  }

  test("a burst of notifications becomes one fleet event with fresh counts per instance", async () => {
    const { clock, hub, fleet } = await subscribedHub();
    try {
      for (let i = 0; i < 500; i++) hub.onNotify("devices");
      await clock.advance(THROTTLE_MS - 1);
      expect(fleet()).toHaveLength(0); // held for the throttle
      await clock.advance(1); // the throttled count, awaited
      expect(fleet()).toHaveLength(1);
      await clock.advance(THROTTLE_MS * 3); // nothing more was heard: nothing more is sent
      expect(fleet()).toHaveLength(1);
      const [row] = await app.database.sql<{ n: number }[]>`select count(*)::int as n from devices`;
      expect(fleet()[0].total).toBe(row!.n);
    } finally {
      await hub.close();
    }
  }, 30_000);

  test("rollout and device notifications: one event per id per throttle, each naming its id", async () => {
    const { clock, hub, events } = await subscribedHub();
    try {
      for (let i = 0; i < 50; i++) {
        hub.onNotify("rollout:r-1");
        hub.onNotify("rollout:r-2");
        hub.onNotify("device:d-1");
      }
      await clock.advance(THROTTLE_MS - 1);
      expect(events).toEqual([]);
      await clock.advance(1);
      expect(events.filter((e) => e.event !== "fleet")).toEqual([
        { event: "rollout", data: JSON.stringify({ id: "r-1" }) },
        { event: "rollout", data: JSON.stringify({ id: "r-2" }) },
        { event: "device", data: JSON.stringify({ id: "d-1" }) },
      ]);
      hub.onNotify("rollout:r-1");
      await clock.advance(THROTTLE_MS);
      expect(events.filter((e) => e.event === "rollout")).toHaveLength(3);
      hub.onNotify("rollouts-unknown");
      await clock.advance(THROTTLE_MS * 2);
      expect(events.filter((e) => e.event !== "fleet")).toHaveLength(4);
    } finally {
      await hub.close();
    }
  }, 30_000);

  test("going offline writes nothing: the hub's re-count on its clock's tick announces it, once", async () => {
    const device = await approvedDevice(app, { product_name: "live-tick" });
    await heartbeat(app, device, await agentHeartbeat({ cpu: 1, memory: 2, disk: 3 }));
    await markSeen(app.database.sql, device.id, 60);
    // Seen a minute ago: online under 5 minutes; then a saved window of 30 s makes it offline with
    // no write at all (as time passing does): only the re-count can tell.
    let window = 300;
    const { clock, hub, fleet, first } = await subscribedHub(async () => window);
    try {
      window = 30;
      await clock.advance(TICK_MS - 1); // (a count that ran would have been awaited)
      expect(fleet()).toHaveLength(0);
      await clock.advance(1); // the tick's re-count, awaited
      expect(fleet()).toHaveLength(1);
      expect(fleet()[0].offline).toBe(first.offline + 1);
      await clock.advance(TICK_MS); // counted again (awaited), unchanged: nothing sent
      expect(fleet()).toHaveLength(1);
    } finally {
      await hub.close();
    }
  }, 30_000);
});
