import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { startFakeDeviceApi } from "./fake-device-api.ts";
import { AGENT_MAIN, BUN, REPO_ROOT, runAgent } from "./helpers.ts";

/**
 * The agent's poll daemon as a subprocess against a fake device API (tests/agent/fake-device-api.ts):
 * backoff on failures, and stopping cleanly on SIGTERM and SIGINT.
 */
const fake = startFakeDeviceApi();
const { api, env } = fake;
afterAll(() => fake.stop());

beforeAll(async () => {
  // Registered once (the fake API approves on the second call): every test here polls as that device.
  const registered = await runAgent(["register", "--max-attempts", "5"], env());
  expect(registered.code).toBe(0);
});

/** `outpost-agent poll` (the daemon) polling every `intervalSeconds`, logging at info to its stderr. */
function spawnPoll(intervalSeconds: number) {
  return Bun.spawn([BUN, AGENT_MAIN, "poll"], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...env({ OUTPOST_AGENT_POLL_INTERVAL_S: String(intervalSeconds), OUTPOST_AGENT_LOG_LEVEL: "info" }),
    },
    stdout: "ignore",
    stderr: "pipe",
  });
}

describe("the agent's poll daemon against a fake device API", () => {
  test("poll daemon backs off on failures and stops cleanly on SIGTERM", async () => {
    api.heartbeatStatus = 500;
    const before = api.requests.length;
    const proc = spawnPoll(1);
    try {
      const beats = () => api.requests.slice(before).filter((q) => q.path.endsWith("/heartbeat"));
      const deadline = Date.now() + 20000;
      while (beats().length < 3 && Date.now() < deadline) await Bun.sleep(50);
      const [a, b, c] = beats().map((q) => q.at);
      // delays: interval·2^(n-1) with ±25 % jitter → ~1 s, then ~2 s (plus the poll's own duration)
      expect(b - a).toBeGreaterThanOrEqual(700);
      expect(c - b).toBeGreaterThanOrEqual(1450);
      expect(c - b).toBeLessThan(8000);
      const stoppedAt = Date.now();
      proc.kill("SIGTERM");
      const code = await proc.exited;
      expect(code).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(3000);
      const stderr = await new Response(proc.stderr).text();
      expect(stderr).toContain("poll failed");
      expect(stderr).toContain("polling stopped");
      const last = JSON.parse(fs.readFileSync(path.join(fake.dir, "state", "last-poll.json"), "utf8"));
      expect(last.ok).toBe(false);
      expect(last.error).toMatch(/answered 500/);
    } finally {
      proc.kill("SIGKILL");
      api.heartbeatStatus = 200;
    }
  }, 30000);

  test("SIGINT stops the daemon cleanly: while waiting, and during a heartbeat (aborted at once)", async () => {
    const beatsSince = (n: number) => api.requests.slice(n).filter((q) => q.path.endsWith("/heartbeat"));
    const waitForBeat = async (n: number) => {
      const deadline = Date.now() + 20000;
      while (beatsSince(n).length === 0 && Date.now() < deadline) await Bun.sleep(50);
      expect(beatsSince(n)).toHaveLength(1);
    };

    // 1. between polls (the 30 s wait)
    let before = api.requests.length;
    let proc = spawnPoll(30);
    try {
      await waitForBeat(before);
      await Bun.sleep(500);
      const stoppedAt = Date.now();
      proc.kill("SIGINT");
      expect(await proc.exited).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(3000);
      expect(await new Response(proc.stderr).text()).toContain("polling stopped");
    } finally {
      proc.kill("SIGKILL");
    }

    // 2. while the heartbeat is in flight (the server answers after 8 s; HTTP timeout 10 s)
    api.heartbeatDelayMs = 8000;
    before = api.requests.length;
    proc = spawnPoll(30);
    try {
      await waitForBeat(before);
      const stoppedAt = Date.now();
      proc.kill("SIGINT");
      expect(await proc.exited).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(3000);
      const stderr = await new Response(proc.stderr).text();
      expect(stderr).toContain("poll interrupted: the agent is stopping");
      expect(stderr).toContain("polling stopped");
    } finally {
      proc.kill("SIGKILL");
      api.heartbeatDelayMs = 0;
    }
  }, 60000);
});
