// The metrics on vs off rounds of bench:heartbeat: what each side served, and the share of throughput
// (and the CPU per heartbeat) a server keeps with metrics on.
import { loadavg } from "node:os";
import { percentile } from "./probes";

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
