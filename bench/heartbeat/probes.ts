/**
 * What bench/heartbeat/run.ts reads off the machine and PostgreSQL while it loads Outpost: process and
 * machine CPU time from /proc, pg_stat_statements and pg_stat_database counters, a free port, percentiles.
 */
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import type postgres from "postgres";

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

type StatRow = { query: string; calls: number; rows: number; execMs: number };

const TICKS_PER_SECOND = 100;

/**
 * CPU seconds (user + system) of a process, and of its children when `withChildren` (PostgreSQL backends
 * and workers): the live ones' own, plus what the process reaped of those that ended (an autovacuum
 * worker that exits mid-measurement would otherwise take its CPU time with it).
 */
export function cpuSeconds(pid: number, withChildren = false): number {
  const own = procStat(pid);
  let ticks = (own?.ticks ?? 0) + (withChildren ? (own?.reapedTicks ?? 0) : 0);
  if (withChildren) for (const child of children(pid)) ticks += child.ticks;
  return ticks / TICKS_PER_SECOND;
}

/**
 * The machine's CPU time since boot, in ticks (/proc/stat): busy, idle (iowait included), iowait (idle
 * while some I/O was outstanding) and stolen.
 */
export type MachineCpu = { busy: number; idle: number; ioWait: number; steal: number };

export function machineCpu(): MachineCpu {
  const [, ...ticks] = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = ticks.map(Number) as number[];
  return {
    busy: user! + nice! + system! + irq! + softirq!,
    idle: idle! + iowait!,
    ioWait: iowait!,
    steal: steal!,
  };
}

/**
 * Shares (%) of the machine's CPU time between two readings: busy, idle (of which waiting on I/O) and
 * stolen by the host. A run that leaves the machine idle was not bound by its CPU but by how its work
 * waited on itself or on the disk.
 */
export function machineShares(before: MachineCpu, after: MachineCpu) {
  const busy = after.busy - before.busy;
  const idle = after.idle - before.idle;
  const ioWait = after.ioWait - before.ioWait;
  const steal = after.steal - before.steal;
  const total = busy + idle + steal || 1;
  const share = (ticks: number) => (100 * ticks) / total;
  return { busy: share(busy), idle: share(idle), ioWait: share(ioWait), steal: share(steal) };
}
export type MachineShares = ReturnType<typeof machineShares>;

/** CPU seconds of a process's main thread (for Bun: the event loop that runs all its JavaScript). */
export function mainThreadCpuSeconds(pid: number): number {
  return (procStat(pid, `/proc/${pid}/task/${pid}/stat`)?.ticks ?? 0) / TICKS_PER_SECOND;
}

/** A process's parent and CPU ticks (its own; of its children it reaped), from /proc. */
function procStat(pid: number, file = `/proc/${pid}/stat`) {
  try {
    const fields = readFileSync(file, "utf8").split(") ")[1]!.split(" ");
    return {
      pid,
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      reapedTicks: Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return undefined;
  }
}

/** The live children of a process, with their CPU ticks. */
function children(parent: number) {
  const found: NonNullable<ReturnType<typeof procStat>>[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat?.ppid === parent) found.push(stat);
  }
  return found;
}

/** PostgreSQL's processes by what they do, from their titles ("postgres: walwriter", …). */
function postgresRole(pid: number): string {
  let title: string;
  try {
    title = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "ended";
  }
  if (title.includes("autovacuum worker")) return "autovacuum";
  for (const role of ["walwriter", "checkpointer", "background writer", "io worker", "walsummarizer"]) {
    if (title.includes(role)) return role;
  }
  if (/postgres: \S+ \S+ /.test(title)) return "backends";
  return "other";
}

/**
 * PostgreSQL's CPU seconds by role (`backends`, `autovacuum`, `walwriter`, `checkpointer`, …): which
 * of its processes a heartbeat's cost lands in. `ended` is what the postmaster reaped of children that
 * exited (autovacuum workers, mostly) plus its own time.
 */
export function postgresCpuByRole(postmasterPid: number): Map<string, number> {
  const own = procStat(postmasterPid);
  const byRole = new Map<string, number>([
    ["ended", ((own?.ticks ?? 0) + (own?.reapedTicks ?? 0)) / TICKS_PER_SECOND],
  ]);
  for (const child of children(postmasterPid)) {
    const role = postgresRole(child.pid);
    byRole.set(role, (byRole.get(role) ?? 0) + child.ticks / TICKS_PER_SECOND);
  }
  return byRole;
}

export async function statements(sql: postgres.Sql): Promise<Map<string, StatRow>> {
  const rows = await sql<StatRow[]>`
    select query, calls::int as calls, rows::int as rows, total_exec_time as "execMs" from pg_stat_statements
    where dbid = (select oid from pg_database where datname = current_database())`;
  return new Map(rows.map((r) => [r.query, r]));
}

export type DatabaseCounters = {
  xact: number;
  ins: number;
  upd: number;
  hot: number;
  deviceUpd: number;
  deviceHot: number;
  /** Cluster-wide: WAL written, full-page images among its records, buffers checkpoints wrote. */
  walBytes: number;
  walFpi: number;
  checkpointBuffers: number;
  /** Checkpoints completed since the statistics were reset. */
  checkpointsDone: number;
};

export async function databaseCounters(sql: postgres.Sql): Promise<DatabaseCounters> {
  const [row] = await sql<DatabaseCounters[]>`
    select d.xact_commit::bigint::float8 as xact, d.tup_inserted::float8 as ins, d.tup_updated::float8 as upd,
      (select coalesce(sum(n_tup_hot_upd), 0)::float8 from pg_stat_user_tables) as hot,
      t.n_tup_upd::float8 as "deviceUpd", t.n_tup_hot_upd::float8 as "deviceHot",
      w.wal_bytes::float8 as "walBytes", w.wal_fpi::float8 as "walFpi",
      c.buffers_written::float8 as "checkpointBuffers", c.num_done::float8 as "checkpointsDone"
    from pg_stat_database d, pg_stat_user_tables t, pg_stat_wal w, pg_stat_checkpointer c
    where d.datname = current_database() and t.relid = 'devices'::regclass`;
  return row!;
}

/** A server's `outpost_event_loop_delay_seconds` histogram: samples in all, and at most each bound (s). */
export type EventLoopDelays = { count: number; atMost: Map<string, number> };

/** Reads the event-loop delay histogram from a server's /metrics (it serves metrics with `token`). */
export async function eventLoopDelays(baseUrl: string, token: string): Promise<EventLoopDelays> {
  const response = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  if (response.status !== 200) throw new Error(`metrics scrape answered ${response.status}`);
  const delays: EventLoopDelays = { count: 0, atMost: new Map() };
  for (const line of (await response.text()).split("\n")) {
    const bucket = /^outpost_event_loop_delay_seconds_bucket\{le="([^"]+)"[^}]*\} (\S+)$/.exec(line);
    if (bucket) delays.atMost.set(bucket[1]!, Number(bucket[2]));
    const count = /^outpost_event_loop_delay_seconds_count(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (count) delays.count = Number(count[1]);
  }
  return delays;
}

/** Of the samples taken between two readings, the share (%) later than `bound` seconds (a bucket's le). */
export function shareLaterThan(before: EventLoopDelays, after: EventLoopDelays, bound: string): number {
  const samples = after.count - before.count;
  if (samples <= 0) return 0;
  const onTime = (after.atMost.get(bound) ?? 0) - (before.atMost.get(bound) ?? 0);
  return (100 * (samples - onTime)) / samples;
}
