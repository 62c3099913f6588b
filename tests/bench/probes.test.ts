import { expect, test } from "bun:test";
import { machineCpu, machineShares, mainThreadCpuSeconds } from "../../bench/heartbeat/probes";

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
  const before = mainThreadCpuSeconds(process.pid);
  const until = performance.now() + 150;
  let spins = 0;
  while (performance.now() < until) spins++;
  expect(spins).toBeGreaterThan(0);
  expect(mainThreadCpuSeconds(process.pid) - before).toBeGreaterThanOrEqual(0.05);
});
