/*---
name: load
version: 1
description: Load averages and scheduler entities from /proc/loadavg.
schema:
  type: object
  required: [load_1m, load_5m, load_15m]
  properties:
    load_1m: { type: number, minimum: 0 }
    load_5m: { type: number, minimum: 0 }
    load_15m: { type: number, minimum: 0 }
    runnable: { type: integer, minimum: 0 }
    processes: { type: integer, minimum: 0 }
---*/
// biome-ignore lint/correctness/noUnusedVariables: main() is called by the agent
function main() {
  const parts = read_file("/proc/loadavg").trim().split(/\s+/);
  const [runnable, processes] = (parts[3] || "0/0").split("/").map(Number);
  return {
    load_1m: Number(parts[0]),
    load_5m: Number(parts[1]),
    load_15m: Number(parts[2]),
    runnable,
    processes,
  };
}
