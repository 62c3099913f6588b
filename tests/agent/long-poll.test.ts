// The agent's side of waiting for work (agent/long-poll.ts) against servers that behave in ways the real
// one should not: waking at once every time, not holding waits, not knowing the route. The real server's
// side is tests/devices/wait.test.ts; a real agent process against it is tests/remote-access/wake.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import pino from "pino";
import { idle } from "../../agent/long-poll.ts";
import { type AgentContext, runPollLoop } from "../../agent/poller.ts";
import { InstantClock } from "../helpers/clock.ts";
import { pollerContext, tempDir, testConfig } from "./helpers.ts";

const DEVICE = "4d7c1a52-8b8e-4f0e-9a51-3c2b1e0f6d7a";
const tmp = tempDir("outpost-long-poll-");
/**
 * The agent and the fake server share a clock on which waiting takes no real time: the times below are
 * what the agent chose to wait (and the server to hold), exact on a loaded machine, in milliseconds.
 */
const clock = new InstantClock();
/** A heartbeat's own time: the wait after it asks for the interval minus this. */
const POLL_MS = 100;
/**
 * How the fake server answers a wait: after `afterMs` of the clock, with `wake` (or a status without
 * body); `held`: not before the agent gives up on it (real time, so only the agent's stopping ends it).
 */
let waitAnswer: { afterMs: number; wake?: string | null; status?: number; code?: string; held?: boolean } = {
  afterMs: 0,
  wake: null,
};
const heartbeats: number[] = [];
const waits: { at: number; query: URLSearchParams }[] = [];
/** Resolves when the next wait reaches the server. */
let waitArrived = Promise.withResolvers<void>();

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname.endsWith("/wait")) {
      waits.push({ at: clock.now(), query: url.searchParams });
      waitArrived.resolve();
      if (waitAnswer.held) await Bun.sleep(30_000);
      await clock.sleep(waitAnswer.afterMs);
      if (waitAnswer.status)
        return Response.json(
          { error: { code: waitAnswer.code ?? "not_found", message: "Not found" } },
          { status: waitAnswer.status },
        );
      return Response.json({ data: { wake: waitAnswer.wake ?? null } });
    }
    heartbeats.push(clock.now());
    await clock.sleep(POLL_MS);
    return Response.json({ data: { commands: [] } });
  },
});
afterAll(() => {
  server.stop(true);
  tmp.cleanup();
});

/** What the agent logged at warn level and above (pino JSON lines). */
const warnings: string[] = [];
const recording = pino({ level: "warn" }, { write: (line: string) => warnings.push(line) });

function context(longPoll = true): AgentContext {
  const config = testConfig(tmp.dir, {
    server_url: `http://127.0.0.1:${server.port}`,
    poll_interval_s: 3,
    long_poll: longPoll,
  });
  return { ...pollerContext(config), logger: recording, clock };
}

async function run(polls: number, longPoll = true, controller = new AbortController()) {
  heartbeats.length = 0;
  waits.length = 0;
  const started = clock.now();
  await runPollLoop(
    context(longPoll),
    { uuid: DEVICE, token: "t" },
    { signal: controller.signal, maxPolls: polls },
  );
  return { ms: clock.now() - started, gaps: heartbeats.slice(1).map((t, i) => t - heartbeats[i]!) };
}

/** Stops the agent once its next wait reaches the server (and is being held). */
function stopWhenWaiting(controller: AbortController) {
  waitArrived = Promise.withResolvers<void>();
  void waitArrived.promise.then(() => controller.abort());
}

describe("waiting for work between polls", () => {
  // First: the warning is given once per process, and the other tests reach it too.
  test("a server without the route is warned about once; a device it does not know is not called that", async () => {
    const unsupported = () => warnings.filter((line) => line.includes("does not hold waits")).length;
    const idleOnce = () =>
      idle(context(), { uuid: DEVICE, token: "t" }, 1_100, false, new AbortController().signal);
    waitAnswer = { afterMs: 0, status: 404, code: "device_not_found" };
    expect(await idleOnce()).toBe("slept");
    waitAnswer = { afterMs: 0, status: 500, code: "internal_error" };
    expect(await idleOnce()).toBe("slept");
    expect(unsupported()).toBe(0);
    waitAnswer = { afterMs: 0, status: 404 };
    expect(await idleOnce()).toBe("slept");
    expect(await idleOnce()).toBe("slept");
    expect(unsupported()).toBe(1);
  });

  test("idle tells how the time ended: at once, woken, slept (also when stopped during a wait)", async () => {
    const creds = { uuid: DEVICE, token: "t" };
    const live = () => new AbortController().signal;
    waitAnswer = { afterMs: 0, wake: "commands" };
    expect(await idle(context(), creds, 1_100, false, live())).toBe("at once"); // accepted unless told not to
    expect(await idle(context(false), creds, 1_100, false, live())).toBe("slept");
    waitAnswer = { afterMs: 1_000, wake: "commands" };
    expect(await idle(context(), creds, 1_100, false, live())).toBe("woken");
    waitAnswer = { afterMs: 0, held: true };
    const stopping = new AbortController();
    stopWhenWaiting(stopping);
    expect(await idle(context(), creds, 5_000, false, stopping.signal)).toBe("slept");
  });

  test("a wait answered without work after being held is followed by another for the rest of the interval", async () => {
    waitAnswer = { afterMs: 1200, wake: null };
    const { gaps } = await run(2);
    expect(gaps[0]!).toBeGreaterThanOrEqual(2_000);
    expect(waits.map((w) => w.query.get("timeout_s"))).toEqual(["2", "1"]);
  });

  test("stopping the agent during a wait ends it at once", async () => {
    waitAnswer = { afterMs: 0, held: true };
    const controller = new AbortController();
    stopWhenWaiting(controller);
    const { ms } = await run(3, true, controller);
    expect(waits).toHaveLength(1);
    expect(ms).toBeLessThan(3_000); // not the wait's 10 s, nor the next interval
  });

  test("a wake after a while starts the next poll at once; the wait asks for the interval and says whether a token is held", async () => {
    waitAnswer = { afterMs: 1000, wake: "commands" };
    const { gaps } = await run(2);
    expect(gaps[0]!).toBeGreaterThanOrEqual(900);
    expect(gaps[0]!).toBeLessThan(2_500); // not the 3 s interval
    expect(waits[0]!.query.get("timeout_s")).toMatch(/^[12]$/); // the interval minus the poll's own time
    expect(waits[0]!.query.get("remote_access")).toBe("0");
    expect(waits[0]!.query.get("api_key")).toBe("t");
  });

  test("a server that wakes at once every time gets two quick polls, then the interval again", async () => {
    waitAnswer = { afterMs: 0, wake: "remote_access" };
    warnings.length = 0;
    const { gaps } = await run(4);
    expect(warnings.filter((line) => line.includes("keeps waking")).length).toBe(1); // the third
    expect(gaps[0]!).toBeLessThan(1_500);
    expect(gaps[1]!).toBeLessThan(1_500);
    expect(gaps[2]!).toBeGreaterThanOrEqual(2_000); // the third at-once wake is not taken
  });

  test("a server that answers at once without work, or does not know the route, leaves the interval to a sleep", async () => {
    for (const answer of [
      { afterMs: 0, wake: null },
      { afterMs: 0, status: 404 },
    ]) {
      waitAnswer = answer;
      warnings.length = 0;
      const { gaps } = await run(2);
      expect(gaps[0]!).toBeGreaterThanOrEqual(2_000);
      expect(waits).toHaveLength(1); // one try per interval, no loop
      expect(warnings.filter((line) => line.includes("keeps waking"))).toEqual([]); // no wake, no warning
    }
  });

  test("long_poll off: no waits, polls on schedule", async () => {
    waitAnswer = { afterMs: 0, wake: "commands" };
    const { gaps } = await run(2, false);
    expect(waits).toHaveLength(0);
    expect(gaps[0]!).toBeGreaterThanOrEqual(2_000);
  });
});
