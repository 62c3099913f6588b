import { expect, test } from "bun:test";
import { heartbeatBodyText } from "../../bench/heartbeat/body";
import type { Ceiling } from "../../bench/heartbeat/ceilings";
import { heartbeatFloor, measureHttpFloor } from "../../bench/heartbeat/floor";
import { FleetLoad } from "../../bench/heartbeat/load";

/**
 * bench:heartbeat's floor: the bare server answers the load's real heartbeats (so the HTTP part is
 * measured, not failed requests), and the floor is the sum of its parts on the machine's cores.
 */
test("the HTTP floor is measured from heartbeats the bare server answered", async () => {
  const devices = [
    { id: "00000000-0000-4000-8000-000000000001", mac: "02:00:00:00:00:01", token: "t1" },
    { id: "00000000-0000-4000-8000-000000000002", mac: "02:00:00:00:00:02", token: "t2" },
  ];
  const floor = await measureHttpFloor(new FleetLoad(devices, heartbeatBodyText()), {
    concurrency: 4,
    durationS: 1,
    warmupS: 0.3,
  });
  expect(floor.requestsPerSecond).toBeGreaterThan(100);
  expect(floor.cpuMsPerRequest.server).toBeGreaterThan(0);
  expect(floor.cpuMsPerRequest.client).toBeGreaterThan(0);
}, 20_000);

test("the floor sums HTTP, the telemetry row and the device row, and bounds the rate by the cores", () => {
  const rows = (postgres: number, client: number): Ceiling => ({
    rowsPerSecond: 1,
    walKbPerRow: 0,
    fullPageImagesPerRow: 0,
    cpuMsPerRow: { postgres, client },
    machine: { busy: 90, idle: 10, ioWait: 0, steal: 0 },
  });
  const floor = heartbeatFloor(
    { requestsPerSecond: 1, cpuMsPerRequest: { server: 0.03, client: 0.02 } },
    rows(0.06, 0.04),
    rows(0.01, 0.005),
    2,
  );
  expect(floor.cpuMsPerHeartbeat.http).toBeCloseTo(0.05, 9);
  expect(floor.cpuMsPerHeartbeat.telemetryRow).toBeCloseTo(0.1, 9);
  expect(floor.cpuMsPerHeartbeat.deviceRow).toBeCloseTo(0.015, 9);
  expect(floor.cpuMsPerHeartbeat.total).toBeCloseTo(0.165, 9);
  expect(floor.maxRate).toBeCloseTo(2000 / 0.165, 6);
});
