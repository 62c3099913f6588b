/**
 * Agent poll benchmark: wall time of one poll (built-in scripts + 10 test scripts, heartbeat to a local
 * fake server, no commands) and the agent's memory while polling.
 *
 *   bun bench/agent/poll.ts [--polls 20] [--daemon-seconds 8] [--agent-env NAME=VALUE ...]
 *
 * Part 1 runs pollOnce() in this process. Part 2 runs the real `poll` daemon (from source, or the compiled
 * binary if dist/outpost-agent exists) as a subprocess with poll_interval_s=1 and samples its RSS.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { DeviceApiClient } from "../../agent/api-client.ts";
import { ensureBuiltinScripts } from "../../agent/builtin-scripts/index.ts";
import { defaultConfig } from "../../agent/config.ts";
import { silentLogger } from "../../agent/logger.ts";
import { type AgentContext, pollOnce, warmUp } from "../../agent/poller.ts";
import { ScriptStore } from "../../agent/scripts/store.ts";
import { saveCredentials } from "../../agent/state.ts";
import { DisabledTunnel } from "../../agent/tunnel.ts";
import { monotonicClock } from "../../shared/clock.ts";
import { machineLine, numberFlag } from "../machine";

const args = process.argv.slice(2);
const POLLS = numberFlag("--polls", 20, 1, 1000);
/** `--agent-env NAME=VALUE` (repeatable): extra environment for the daemon, e.g. a runtime knob. */
const AGENT_ENV = Object.fromEntries(
  args.flatMap((a, i) => (args[i - 1] === "--agent-env" && a.includes("=") ? [a.split(/=(.*)/s, 2)] : [])),
) as Record<string, string>;
console.log(`${machineLine()} at start`);
const DAEMON_SECONDS = numberFlag("--daemon-seconds", 8, 0, 120);
const DEVICE_ID = "5f0c6f0e-0d5e-4a3e-9b1e-3c1a2b3c4d5e";
const TOKEN = "bench-token";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "outpost-bench-"));
let heartbeats = 0;
let heartbeatBytes = 0;
/** The agent's own account of each poll's script runs (`telemetry.meta.collect_duration_ms`). */
const pollDurations: number[] = [];
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname.endsWith("/heartbeat")) {
      const text = await req.text();
      heartbeatBytes = text.length;
      heartbeats++;
      const duration = Number(JSON.parse(text)?.telemetry?.meta?.collect_duration_ms);
      if (Number.isFinite(duration)) pollDurations.push(duration);
      return Response.json({ data: { commands: [] } });
    }
    return Response.json({ data: { acknowledged_count: 0 } }, { status: 202 });
  },
});

/** Ten test scripts of different kinds: compute, /proc parsing, async builtins. */
function testScripts(): string[] {
  const bodies = [
    "function main() { let s = 0; for (let i = 0; i < 20000; i++) s += i % 7; return { value: s }; }",
    'function main() { return { value: read_file("/proc/loadavg").length }; }',
    'function main() { return { value: read_file("/proc/meminfo").split("\\n").length }; }',
    'function main() { return { value: read_file("/proc/stat").split("\\n").filter((l) => l.startsWith("cpu")).length }; }',
    "function main() { const o = {}; for (let i = 0; i < 200; i++) o['k' + i] = i; return { value: Object.keys(o).length }; }",
    "async function main() { await sleep(5); return { value: 1 }; }",
    "function main() { return { value: JSON.parse(JSON.stringify({ a: [1, 2, 3] })).a.length }; }",
    'function main() { return { value: read_file("/proc/uptime").trim().split(" ").length }; }',
    'function main() { return { value: "x".repeat(1000).length }; }',
    'function main() { return { value: read_file("/proc/net/dev").split("\\n").length }; }',
  ];
  return bodies.map(
    (body, i) =>
      `/*---\nname: bench${i}\nversion: 1\nschema:\n  type: object\n  required: [value]\n  properties:\n    value: { type: number }\n---*/\n${body}\n`,
  );
}

function percentile(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Resident memory in MiB: all of it, its peak, and its two parts: private (anonymous: heaps, JIT code)
 * and file-backed (pages of the executable and libraries: clean, shared, reclaimable by the kernel).
 */
function rssOf(pid: number): { rss: number; hwm: number; anon: number; file: number } | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return {
      rss: kb("VmRSS") / 1024,
      hwm: kb("VmHWM") / 1024,
      anon: kb("RssAnon") / 1024,
      file: kb("RssFile") / 1024,
    };
  } catch {
    return null;
  }
}

async function inProcess() {
  const config = defaultConfig(path.join(dir, "state"));
  config.server_url = `http://127.0.0.1:${server.port}`;
  const store = new ScriptStore(config.scripts_dir);
  ensureBuiltinScripts(store);
  for (const text of testScripts()) store.install(text, { force: true });
  const ctx: AgentContext = {
    config,
    configSource: null,
    logger: silentLogger(),
    store,
    api: new DeviceApiClient(config.server_url, config.http_timeout_ms),
    tunnel: new DisabledTunnel(),
    startedAt: Date.now(),
    clock: monotonicClock,
  };
  const creds = { uuid: DEVICE_ID, token: TOKEN };
  saveCredentials(config.state_dir, creds);
  // as the daemon does at start: compile WASM, fill the instance pool, take the cpu script's first sample
  const warmUpMs = await warmUp(ctx);
  const times: number[] = [];
  let failures = 0;
  for (let i = 0; i < POLLS; i++) {
    const started = performance.now();
    const summary = await pollOnce(ctx, creds);
    times.push(performance.now() - started);
    failures += summary.scriptErrors;
  }
  const cold = times[0];
  const warm = times.slice(1).sort((a, b) => a - b);
  const scripts = store.latest().length;
  console.log(
    `== in-process pollOnce: ${scripts} scripts (6 built-in + 10 test), ${POLLS} polls, ${failures} script failures`,
  );
  console.log(`   daemon start-up warm-up (WASM compile, instance pool, first cpu sample): ${warmUpMs} ms`);
  console.log(`   first poll after the warm-up: ${cold.toFixed(1)} ms`);
  if (warm.length) {
    console.log(
      `   steady state: median ${percentile(warm, 50).toFixed(1)} ms, p95 ${percentile(warm, 95).toFixed(1)} ms, max ${warm[warm.length - 1].toFixed(1)} ms (target < 300 ms)`,
    );
  }
  console.log(
    `   heartbeat body: ${heartbeatBytes} bytes; bench process RSS ${(process.memoryUsage().rss / 1048576).toFixed(1)} MiB`,
  );
  return config;
}

async function daemon(config: ReturnType<typeof defaultConfig>) {
  if (DAEMON_SECONDS === 0) return;
  // AGENT_BINARY: measure another build (e.g. one compiled with other flags) instead of dist/'s.
  const binary = process.env.AGENT_BINARY ?? path.resolve(import.meta.dir, "../../dist/outpost-agent");
  const cmd = fs.existsSync(binary)
    ? [binary, "poll"]
    : [
        path.resolve(import.meta.dir, "../../node_modules/.bin/bun"),
        path.resolve(import.meta.dir, "../../agent/main.ts"),
        "poll",
      ];
  const before = heartbeats;
  pollDurations.length = 0;
  const proc = Bun.spawn(cmd, {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dir,
      OUTPOST_AGENT_STATE_DIR: config.state_dir,
      OUTPOST_AGENT_SERVER_URL: config.server_url,
      OUTPOST_AGENT_POLL_INTERVAL_S: "1",
      OUTPOST_AGENT_LOG_LEVEL: "warn",
      // AGENT_SCRIPT_CONCURRENCY: measure the daemon with another sandbox pool size.
      ...(process.env.AGENT_SCRIPT_CONCURRENCY
        ? { OUTPOST_AGENT_SCRIPT_CONCURRENCY: process.env.AGENT_SCRIPT_CONCURRENCY }
        : {}),
      ...AGENT_ENV,
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  const samples: number[] = [];
  const anon: number[] = [];
  const file: number[] = [];
  const deadline = Date.now() + DAEMON_SECONDS * 1000;
  while (Date.now() < deadline) {
    await Bun.sleep(250);
    const m = rssOf(proc.pid);
    if (m) {
      samples.push(m.rss);
      anon.push(m.anon);
      file.push(m.file);
    }
  }
  const final = rssOf(proc.pid);
  proc.kill("SIGTERM");
  const code = await proc.exited;
  samples.sort((a, b) => a - b);
  console.log(
    `== daemon (${cmd[0].endsWith("outpost-agent") ? "compiled binary" : "bun agent/main.ts"}), poll_interval_s=1, ${DAEMON_SECONDS} s${
      Object.keys(AGENT_ENV).length
        ? `, ${Object.entries(AGENT_ENV)
            .map(([k, v]) => `${k}=${v}`)
            .join(" ")}`
        : ""
    }`,
  );
  console.log(`   heartbeats sent: ${heartbeats - before}; exit code after SIGTERM: ${code}`);
  if (pollDurations.length) {
    const sorted = [...pollDurations].sort((a, b) => a - b);
    console.log(
      `   script runs per poll (meta.collect_duration_ms): first ${pollDurations[0]!.toFixed(1)} ms, median ${percentile(sorted, 50).toFixed(1)} ms, max ${sorted[sorted.length - 1]!.toFixed(1)} ms`,
    );
  }
  if (samples.length && final) {
    console.log(
      `   RSS while polling: median ${percentile(samples, 50).toFixed(1)} MiB, max ${samples[samples.length - 1].toFixed(1)} MiB, peak (VmHWM) ${final.hwm.toFixed(1)} MiB`,
    );
    const median = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        50,
      ).toFixed(1);
    console.log(
      `   of which private (RssAnon) median ${median(anon)} MiB, file-backed code pages (RssFile) median ${median(file)} MiB`,
    );
  }
}

try {
  const config = await inProcess();
  await daemon(config);
} finally {
  server.stop(true);
  fs.rmSync(dir, { recursive: true, force: true });
}
