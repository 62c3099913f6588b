import { expect, test } from "bun:test";
import {
  eventLoopDelays,
  machineCpu,
  machineShares,
  mainThreadCpuSeconds,
  shareLaterThan,
} from "../../bench/heartbeat/probes";

test("the machine's shares split the ticks between two readings into busy, idle (I/O wait apart) and stolen", () => {
  const shares = machineShares(
    { busy: 100, idle: 50, ioWait: 10, steal: 0 },
    { busy: 160, idle: 85, ioWait: 20, steal: 5 },
  );
  expect(shares.busy).toBeCloseTo(60, 9);
  expect(shares.idle).toBeCloseTo(35, 9);
  expect(shares.ioWait).toBeCloseTo(10, 9);
  expect(shares.steal).toBeCloseTo(5, 9);
  const now = machineCpu();
  expect(now.busy + now.idle).toBeGreaterThan(0);
  expect(machineShares(now, now)).toEqual({ busy: 0, idle: 0, ioWait: 0, steal: 0 });
});

test("the main thread's CPU seconds grow while it computes", () => {
  // Spin until the reading has grown, bounded in wall time: on a loaded machine 150 ms of wall time
  // can be 40 ms of CPU, so a fixed spin would measure the machine's load, not the probe.
  const before = mainThreadCpuSeconds(process.pid);
  const until = performance.now() + 10_000;
  let grown = 0;
  while (performance.now() < until && grown < 0.05) {
    const spinUntil = performance.now() + 20;
    while (performance.now() < spinUntil);
    grown = mainThreadCpuSeconds(process.pid) - before;
  }
  expect(grown).toBeGreaterThanOrEqual(0.05);
});

test("the event loop's late share comes from two scrapes of the server's delay histogram", async () => {
  const histogram = (upTo25ms: number, upTo100ms: number, count: number) =>
    [
      "# TYPE outpost_event_loop_delay_seconds histogram",
      `outpost_event_loop_delay_seconds_bucket{le="0.025",service="outpost"} ${upTo25ms}`,
      `outpost_event_loop_delay_seconds_bucket{le="0.1",service="outpost"} ${upTo100ms}`,
      `outpost_event_loop_delay_seconds_bucket{le="+Inf",service="outpost"} ${count}`,
      'outpost_event_loop_delay_seconds_sum{service="outpost"} 1.5',
      `outpost_event_loop_delay_seconds_count{service="outpost"} ${count}`,
    ].join("\n");
  const pages = [histogram(90, 98, 100), histogram(150, 195, 200)];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) =>
      request.headers.get("authorization") === "Bearer t"
        ? new Response(pages.shift())
        : new Response("no", { status: 401 }),
  });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const before = await eventLoopDelays(base, "t");
    const after = await eventLoopDelays(base, "t");
    expect(before).toEqual({
      count: 100,
      atMost: new Map([
        ["0.025", 90],
        ["0.1", 98],
        ["+Inf", 100],
      ]),
    });
    // Between the scrapes: 100 samples, 60 within 25 ms and 97 within 100 ms.
    expect(shareLaterThan(before, after, "0.025")).toBeCloseTo(40, 9);
    expect(shareLaterThan(before, after, "0.1")).toBeCloseTo(3, 9);
    expect(shareLaterThan(after, after, "0.1")).toBe(0);
    await expect(eventLoopDelays(base, "wrong")).rejects.toThrow("answered 401");
  } finally {
    server.stop(true);
  }
});
