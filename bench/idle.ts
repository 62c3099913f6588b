/**
 * What an Outpost at rest costs: one process with every role (web, worker, tunnel) on its own
 * PostgreSQL, a small fleet polling as the agent does (a heartbeat every `--poll` seconds, spread over
 * the interval, and between heartbeats a held `GET …/wait` of up to 55 s, as agent/long-poll.ts holds
 * it), and one operator's page open (its live-updates stream, `/live/events`). After a warm-up, it reads
 * the CPU time of Outpost's process and of PostgreSQL (the postmaster and every backend and worker)
 * over `--duration` seconds, and prints each as a share of one core.
 *
 *   npm run bench:idle -- [--devices 100] [--poll 60] [--duration 300] [--warmup 30]
 *
 * docs/scaling.md, **At rest**, has the figures and the goal (below 2 % of one core in all).
 */
import { DeviceApiClient } from "../agent/api-client";
import { connectDatabase } from "../modules/platform/database";
import { operatorSession } from "../tests/helpers/sessions";
import { heartbeatBody } from "./heartbeat/body";
import { startMigratedBenchDatabase } from "./heartbeat/database";
import { knob as flagKnob } from "./heartbeat/flags";
import { cpuSeconds, freePort, postgresCpuByRole, statements } from "./heartbeat/probes";
import { statementDeltas } from "./heartbeat/report";
import { seedFleet } from "./heartbeat/seed";
import { BENCH_SECRET_KEY, startBenchServer } from "./heartbeat/server";
import { benchLifecycle } from "./lifecycle";

if (process.argv.includes("--help")) {
  console.log(
    "usage: npm run bench:idle -- [--devices N] [--poll SECONDS] [--duration SECONDS] [--warmup SECONDS]",
  );
  console.log("example: npm run bench:idle -- --devices 100 --poll 60 --duration 300");
  process.exit(0);
}
const knob = (flag: string, env: string, fallback: number) => flagKnob("bench:idle", flag, env, fallback);
const DEVICES = Math.max(1, knob("devices", "BENCH_DEVICES", 100));
const POLL_S = Math.max(5, knob("poll", "BENCH_POLL_SECONDS", 60));
const DURATION_S = Math.max(10, knob("duration", "BENCH_DURATION_SECONDS", 300));
const WARMUP_S = Math.max(0, knob("warmup", "BENCH_WARMUP_SECONDS", 30));
const WAIT_MAX_S = 55; // agent/long-poll.ts
const { cleanups, run } = benchLifecycle((DURATION_S + WARMUP_S + 300) * 1000);

async function main() {
  const { url: databaseUrl, postgresPid, sql } = await startMigratedBenchDatabase("bench:idle", 2, cleanups);
  console.log(`Outpost at rest: ${DEVICES} devices polling every ${POLL_S} s, one operator page open`);
  await sql.unsafe("create extension if not exists pg_stat_statements");
  const { devices } = await seedFleet(sql, DEVICES, 0);
  const ports = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const server = await startBenchServer({
    databaseUrl,
    cleanups,
    extraEnv: {
      OUTPOST_ROLE: "all",
      TUNNEL_SSH_PORT: String(ports[0]),
      TUNNEL_HTTP_PORT: String(ports[1]),
      TUNNEL_MUX_PORT: String(ports[2]),
      TUNNEL_DATA_PORT: String(ports[3]),
    },
  });
  const serverPid = server.child.pid!;

  // One operator's page: its live stream, read as a browser reads it.
  const database = connectDatabase(databaseUrl, 1);
  cleanups.push(() => database.sql.end({ timeout: 5 }));
  const operator = await operatorSession(database.db, BENCH_SECRET_KEY, "viewer");
  const page = new AbortController();
  cleanups.push(() => page.abort());
  const live = await fetch(`${server.url}/live/events`, {
    headers: { cookie: operator.cookie },
    signal: page.signal,
  });
  if (live.status !== 200) throw new Error(`/live/events answered ${live.status}`);
  let liveEvents = 0;
  void (async () => {
    const reader = live.body!.getReader();
    const decoder = new TextDecoder();
    try {
      for (let read = await reader.read(); !read.done; read = await reader.read())
        liveEvents += decoder.decode(read.value).split("\nevent: ").length - 1;
    } catch {
      // the page closed
    }
  })();

  // The fleet: each device's heartbeat at its own offset in the interval, waits held in between.
  const stop = new AbortController();
  cleanups.push(() => stop.abort());
  const api = new DeviceApiClient(server.url, (WAIT_MAX_S + 10) * 1000);
  let heartbeats = 0;
  let failures = 0;
  const poll = async (device: (typeof devices)[number], index: number) => {
    await Bun.sleep(((index * POLL_S) / DEVICES) * 1000);
    let uptime = 1000;
    while (!stop.signal.aborted) {
      const next = performance.now() + POLL_S * 1000;
      try {
        await api.heartbeat(device.id, device.token, heartbeatBody(device.mac, uptime++), stop.signal);
        heartbeats++;
      } catch {
        if (!stop.signal.aborted) failures++;
      }
      while (!stop.signal.aborted && next - performance.now() >= 1000) {
        const seconds = Math.min(WAIT_MAX_S, Math.floor((next - performance.now()) / 1000));
        try {
          await api.wait(device.id, device.token, seconds, false, stop.signal);
        } catch {
          if (!stop.signal.aborted) failures++;
          break;
        }
      }
      const left = next - performance.now();
      if (left > 0 && !stop.signal.aborted) await Bun.sleep(left);
    }
  };
  const fleet = devices.map((device, i) => poll(device, i));

  console.log(`  warming up for ${WARMUP_S} s`);
  await Bun.sleep(WARMUP_S * 1000);
  const before = {
    outpost: cpuSeconds(serverPid, true),
    postgres: cpuSeconds(postgresPid, true),
    self: process.cpuUsage(),
    byRole: postgresCpuByRole(postgresPid),
    statements: await statements(sql),
  };
  const heartbeatsBefore = heartbeats;
  const started = performance.now();
  console.log(`  measuring for ${DURATION_S} s`);
  await Bun.sleep(DURATION_S * 1000);
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(before.self);
  const share = (cpu: number) => (100 * cpu) / seconds;
  const outpost = share(cpuSeconds(serverPid, true) - before.outpost);
  const postgres = share(cpuSeconds(postgresPid, true) - before.postgres);
  const generator = share((used.user + used.system) / 1e6);
  const byRole = [...postgresCpuByRole(postgresPid)].map(
    ([role, cpu]) => [role, share(cpu - (before.byRole.get(role) ?? 0))] as const,
  );
  const ran = statementDeltas(before.statements, await statements(sql));
  stop.abort();
  page.abort();
  await Promise.allSettled(fleet);

  const measured = heartbeats - heartbeatsBefore;
  console.log(
    `\n  heartbeats: ${measured} in ${seconds.toFixed(0)} s (${(measured / seconds).toFixed(2)}/s), ${failures} failed requests, ${liveEvents} live events`,
  );
  console.log(
    `  CPU, share of one core: Outpost ${outpost.toFixed(2)} %, PostgreSQL ${postgres.toFixed(2)} %, together ${(outpost + postgres).toFixed(2)} % (goal < 2 %); the simulated fleet ${generator.toFixed(2)} %`,
  );
  console.log(
    `  PostgreSQL by process: ${byRole
      .filter(([, cpu]) => cpu >= 0.005)
      .sort((a, b) => b[1] - a[1])
      .map(([role, cpu]) => `${role} ${cpu.toFixed(2)} %`)
      .join(", ")}`,
  );
  console.log(`  statements at rest, most called first (per minute, total exec ms):`);
  for (const s of ran.slice(0, 15))
    console.log(
      `    ${((60 * s.calls) / seconds).toFixed(1).padStart(7)}/min ${s.execMs.toFixed(0).padStart(6)} ms  ${s.query}`,
    );
  console.log(
    JSON.stringify({
      bench: "idle",
      devices: DEVICES,
      poll_s: POLL_S,
      duration_s: Math.round(seconds),
      heartbeats: measured,
      failed_requests: failures,
      live_events: liveEvents,
      cpu_percent_of_one_core: {
        outpost: +outpost.toFixed(2),
        postgres: +postgres.toFixed(2),
        fleet: +generator.toFixed(2),
      },
      postgres_cpu_percent_by_process: Object.fromEntries(
        byRole.map(([role, cpu]) => [role, +cpu.toFixed(3)]),
      ),
      statements_per_minute: Math.round((60 * ran.reduce((sum, s) => sum + s.calls, 0)) / seconds),
    }),
  );
}

await run(main);
