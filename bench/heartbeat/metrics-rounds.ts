// The metrics on vs off rounds of bench:heartbeat: what each side served, and the share of throughput
// (and the CPU per heartbeat) a server keeps with metrics on.
import { loadavg } from "node:os";
import type { FleetLoad } from "./load";
import { cpuSeconds, percentile } from "./probes";

/** One side of a round: load against one server for a few seconds. */
export type Phase = {
  metrics: boolean;
  rate: number;
  p99: number;
  refused: number;
  serverCpu: number;
  pgCpu: number;
};

/** Prints the rounds (alternated off-on, on-off, …), their ratios and the CPU per heartbeat each side cost. */
export function reportMetricsRounds(
  phases: Phase[],
  options: { rounds: number; phaseSeconds: number; scrapeMs: number[]; scrapeEverySeconds: number },
) {
  const { rounds, phaseSeconds, scrapeMs, scrapeEverySeconds } = options;
  const fmt = (n: number, digits = 1) => n.toFixed(digits);
  const mean = (metrics: boolean) => {
    const chosen = phases.filter((p) => p.metrics === metrics);
    return chosen.reduce((sum, p) => sum + p.rate, 0) / chosen.length;
  };
  // Each round's own ratio (its two sides ran back to back, under the same background load).
  const ratios = Array.from({ length: rounds }, (_, round) => {
    const [a, b] = phases.slice(round * 2, round * 2 + 2) as [Phase, Phase];
    return (100 * (a.metrics ? a.rate : b.rate)) / (a.metrics ? b.rate : a.rate);
  }).sort((x, y) => x - y);
  const median =
    ratios[Math.floor((ratios.length - 1) / 2)]! / 2 + ratios[Math.ceil((ratios.length - 1) / 2)]! / 2;
  console.log("");
  console.log(
    `  metrics on vs off (${rounds} rounds of ${phaseSeconds}s a side, alternated; ${scrapeMs.length} scrapes of /metrics, every ${scrapeEverySeconds}s, median ${fmt(
      percentile(
        [...scrapeMs].sort((a, b) => a - b),
        50,
      ),
    )} ms):`,
  );
  for (const p of phases)
    console.log(
      `    metrics ${p.metrics ? "on " : "off"}  ${fmt(p.rate, 0)} heartbeats/s, p99 ${fmt(p.p99)} ms, CPU per heartbeat: server ${fmt(p.serverCpu, 3)} ms, PostgreSQL ${fmt(p.pgCpu, 3)} ms${p.refused ? `, ${p.refused} not 200` : ""}`,
    );
  const ratio = (100 * mean(true)) / mean(false);
  // CPU per heartbeat, weighted by heartbeats served: the cost metrics add to each one.
  const cpuPer = (metrics: boolean, key: "serverCpu" | "pgCpu") => {
    const chosen = phases.filter((p) => p.metrics === metrics);
    const beats = chosen.reduce((sum, p) => sum + p.rate, 0);
    return chosen.reduce((sum, p) => sum + p[key] * p.rate, 0) / beats;
  };
  const cpuOff = cpuPer(false, "serverCpu") + cpuPer(false, "pgCpu");
  const cpuOn = cpuPer(true, "serverCpu") + cpuPer(true, "pgCpu");
  console.log(
    `    CPU per heartbeat (server + PostgreSQL): off ${fmt(cpuPer(false, "serverCpu"), 3)} + ${fmt(cpuPer(false, "pgCpu"), 3)} ms, on ${fmt(cpuPer(true, "serverCpu"), 3)} + ${fmt(cpuPer(true, "pgCpu"), 3)} ms: a CPU-bound server keeps ${fmt((100 * cpuOff) / cpuOn)}% of its throughput with metrics on`,
  );
  console.log(
    `    per round (on/off): ${ratios.map((r) => `${fmt(r)}%`).join(", ")}; median ${fmt(median)}%`,
  );
  console.log(
    `    mean: off ${fmt(mean(false), 0)}/s, on ${fmt(mean(true), 0)}/s: ${fmt(ratio)}% of the throughput kept with metrics on (target ≥ 97%: ${ratio >= 97 ? "met" : "NOT met"}; load average ${loadavg()[0].toFixed(1)})`,
  );
}

interface RoundsOptions {
  load: FleetLoad;
  concurrency: number;
  warmupS: number;
  /** The first measurement's duration: the server without metrics is warmed that long first. */
  warmServerS: number;
  rounds: number;
  phaseSeconds: number;
  withMetrics: { url: string; pid: number };
  withoutMetrics: { url: string; pid: number };
  postgresPid: number | undefined;
  /** Turns the scraper of the metrics server on or off. */
  scrape(on: boolean): void;
}

/** Alternated rounds of load (off-on, on-off, …) against the server with metrics and the one without. */
export async function runMetricsRounds(o: RoundsOptions): Promise<Phase[]> {
  /** Load against one server: warmupS unmeasured, then `seconds` measured. */
  const phase = async (metrics: boolean, seconds: number): Promise<Phase> => {
    const target = metrics ? o.withMetrics : o.withoutMetrics;
    const latencies: number[] = [];
    let refused = 0;
    let measuring = false;
    let stop = false;
    o.scrape(metrics);
    const callers = o.load.callers(
      o.concurrency,
      target.url,
      () => stop,
      (status, ms) => {
        if (!measuring) return;
        if (status === 200) latencies.push(ms);
        else refused++;
      },
    );
    await Bun.sleep(o.warmupS * 1000);
    // CPU seconds spent per heartbeat hold up better than throughput on a busy machine.
    const cpu0 = {
      server: cpuSeconds(target.pid),
      pg: o.postgresPid ? cpuSeconds(o.postgresPid, true) : Number.NaN,
    };
    measuring = true;
    const started = performance.now();
    await Bun.sleep(seconds * 1000);
    measuring = false;
    const elapsed = (performance.now() - started) / 1000;
    const served = latencies.length;
    const serverCpu = (1000 * (cpuSeconds(target.pid) - cpu0.server)) / served;
    const pgCpu = o.postgresPid ? (1000 * (cpuSeconds(o.postgresPid, true) - cpu0.pg)) / served : Number.NaN;
    stop = true;
    await callers;
    o.scrape(false);
    latencies.sort((a, b) => a - b);
    return { metrics, rate: served / elapsed, p99: percentile(latencies, 99), refused, serverCpu, pgCpu };
  };
  // The server without metrics has served nothing yet: warm it (JIT, connections) as the other was.
  await phase(false, o.warmServerS);
  const phases: Phase[] = [];
  for (let round = 0; round < o.rounds; round++) {
    for (const metrics of round % 2 === 0 ? [false, true] : [true, false])
      phases.push(await phase(metrics, o.phaseSeconds));
  }
  return phases;
}
