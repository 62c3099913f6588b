import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import { type AgentContext, runPollLoop } from "../../agent/poller.ts";
import { lastPollPath, saveCredentials } from "../../agent/state.ts";
import { type Clock, systemClock } from "../../shared/clock.ts";
import { InstantClock } from "../helpers/clock.ts";
import { pollerContext, tempDir, testConfig } from "./helpers.ts";

const DEVICE = "9b2f0c3e-5d4a-4b6c-8d7e-1f2a3b4c5d6e";
const tmp = tempDir("outpost-poller-");
const keys: string[] = [];
const arrivals: number[] = [];
let status = 200;
let heartbeatDelayMs = 0;
/** The clock the fake server holds heartbeats and notes arrivals on (a test shares it with the loop). */
let serverClock: Clock = systemClock;
let server: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      keys.push(url.searchParams.get("api_key") ?? "");
      arrivals.push(serverClock.now());
      if (heartbeatDelayMs) await serverClock.sleep(heartbeatDelayMs);
      if (status === 429) {
        return Response.json(
          { error: { code: "rate_limited", message: "slow down" } },
          { status, headers: { "retry-after": "7" } },
        );
      }
      return Response.json({ data: { commands: [] } });
    },
  });
});

afterAll(() => {
  server.stop(true);
  tmp.cleanup();
});

function context(): AgentContext {
  const config = testConfig(tmp.dir, {
    server_url: `http://127.0.0.1:${server.port}`,
    poll_interval_s: 1,
    poll_max_backoff_s: 300,
  });
  return pollerContext(config);
}

describe("poll loop", () => {
  test("picks up credentials rotated on disk between polls", async () => {
    const ctx = context();
    saveCredentials(ctx.config.state_dir, { uuid: DEVICE, token: "first" });
    keys.length = 0;
    const controller = new AbortController();
    const loop = runPollLoop(
      ctx,
      { uuid: DEVICE, token: "first" },
      { signal: controller.signal, maxPolls: 2 },
    );
    await Bun.sleep(300);
    saveCredentials(ctx.config.state_dir, { uuid: DEVICE, token: "second" });
    expect(await loop).toBe(0);
    expect(keys).toEqual(["first", "second"]);
  });

  test("a 429 waits at least Retry-After; SIGTERM-style abort ends the wait at once", async () => {
    const ctx = context();
    saveCredentials(ctx.config.state_dir, { uuid: DEVICE, token: "first" });
    status = 429;
    const controller = new AbortController();
    const started = Date.now();
    const loop = runPollLoop(
      ctx,
      { uuid: DEVICE, token: "first" },
      { signal: controller.signal, random: () => 0.5 },
    );
    await Bun.sleep(500);
    const last = JSON.parse(fs.readFileSync(lastPollPath(ctx.config.state_dir), "utf8"));
    expect(last.ok).toBe(false);
    expect(last.error).toContain("429 rate_limited");
    expect(last.next_poll_in_ms).toBe(7000);
    controller.abort();
    expect(await loop).toBe(1);
    expect(Date.now() - started).toBeLessThan(2000);
    status = 200;
  });

  test("polls start one interval apart: the wait is the interval minus the poll's own duration", async () => {
    // The loop and the server on one clock where waiting takes no real time: the gaps are exact.
    const ctx = { ...context(), clock: new InstantClock() };
    serverClock = ctx.clock;
    ctx.config.poll_interval_s = 2;
    saveCredentials(ctx.config.state_dir, { uuid: DEVICE, token: "first" });
    heartbeatDelayMs = 1100; // every poll takes > 1 s (what is left, < 1 s, is not worth a wait)
    arrivals.length = 0;
    try {
      const failures = await runPollLoop(
        ctx,
        { uuid: DEVICE, token: "first" },
        { signal: new AbortController().signal, maxPolls: 3 },
      );
      expect(failures).toBe(0);
    } finally {
      heartbeatDelayMs = 0;
      serverClock = systemClock;
    }
    expect(arrivals).toHaveLength(3);
    const gaps = [arrivals[1] - arrivals[0], arrivals[2] - arrivals[1]];
    // waiting a whole interval after each poll would make these 3000 ms, not waiting at all 1000 ms
    for (const gap of gaps) {
      expect(gap).toBeGreaterThan(1800);
      expect(gap).toBeLessThan(2800);
    }
    const last = JSON.parse(fs.readFileSync(lastPollPath(ctx.config.state_dir), "utf8"));
    expect(last.ok).toBe(true);
    expect(last.next_poll_in_ms).toBeLessThanOrEqual(1000);
  }, 20000);

  test("stopping during a heartbeat aborts the request at once (not after the 10 s HTTP timeout)", async () => {
    const ctx = context();
    saveCredentials(ctx.config.state_dir, { uuid: DEVICE, token: "first" });
    heartbeatDelayMs = 8000;
    arrivals.length = 0;
    const controller = new AbortController();
    try {
      const loop = runPollLoop(ctx, { uuid: DEVICE, token: "first" }, { signal: controller.signal });
      const deadline = Date.now() + 10000;
      while (arrivals.length === 0 && Date.now() < deadline) await Bun.sleep(20);
      expect(arrivals).toHaveLength(1);
      const stoppedAt = performance.now();
      controller.abort();
      await loop;
      expect(performance.now() - stoppedAt).toBeLessThan(1000);
    } finally {
      heartbeatDelayMs = 0;
    }
  }, 20000);
});
