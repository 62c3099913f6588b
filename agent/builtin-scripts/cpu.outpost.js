/*---
name: cpu
version: 2
description: CPU utilisation since the previous poll (since boot on the first run), from /proc/stat.
schema:
  type: object
  required: [usage_pct, cores]
  properties:
    usage_pct: { type: number, minimum: 0, maximum: 100 }
    user_pct: { type: number, minimum: 0, maximum: 100 }
    system_pct: { type: number, minimum: 0, maximum: 100 }
    iowait_pct: { type: number, minimum: 0, maximum: 100 }
    steal_pct: { type: number, minimum: 0, maximum: 100 }
    cores: { type: integer, minimum: 1 }
    interval_ms: { type: integer, minimum: 0 }
---*/
function sample() {
  const lines = read_file("/proc/stat").split("\n");
  const f = lines[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f.concat([0, 0, 0, 0, 0, 0, 0, 0]);
  const cores = lines.filter((l) => /^cpu\d+\s/.test(l)).length || 1;
  return {
    at: Date.now(),
    user: user + nice,
    system: system + irq + softirq,
    idle,
    iowait,
    steal,
    total: user + nice + system + idle + iowait + irq + softirq + steal,
    cores,
  };
}

function pct(part, total) {
  return total > 0 ? Math.round((Math.max(0, part) / total) * 10000) / 100 : 0;
}

// biome-ignore lint/correctness/noUnusedVariables: main() is called by the agent
async function main() {
  let previous = memo_get("sample");
  const current = sample();
  if (!previous || current.total <= previous.total) {
    // First run: the average since boot. A short sample here would measure the agent's own start-up
    // (often 100 %) and draw a spike on every restart.
    const uptimeMs = Number(read_file("/proc/uptime").trim().split(/\s+/)[0]) * 1000;
    previous = { at: current.at - uptimeMs, user: 0, system: 0, idle: 0, iowait: 0, steal: 0, total: 0 };
  }
  memo_set("sample", current);
  const total = current.total - previous.total;
  const busy = total - (current.idle - previous.idle) - (current.iowait - previous.iowait);
  return {
    usage_pct: Math.min(100, pct(busy, total)),
    user_pct: Math.min(100, pct(current.user - previous.user, total)),
    system_pct: Math.min(100, pct(current.system - previous.system, total)),
    iowait_pct: Math.min(100, pct(current.iowait - previous.iowait, total)),
    steal_pct: Math.min(100, pct(current.steal - previous.steal, total)),
    cores: current.cores,
    interval_ms: Math.max(0, Math.round(current.at - previous.at)),
  };
}
