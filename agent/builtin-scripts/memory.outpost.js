/*---
name: memory
version: 1
description: Memory and swap usage from /proc/meminfo (used = total - available).
schema:
  type: object
  required: [total_bytes, available_bytes, used_bytes, used_pct]
  properties:
    total_bytes: { type: integer, minimum: 0 }
    available_bytes: { type: integer, minimum: 0 }
    used_bytes: { type: integer, minimum: 0 }
    used_pct: { type: number, minimum: 0, maximum: 100 }
    swap_total_bytes: { type: integer, minimum: 0 }
    swap_used_bytes: { type: integer, minimum: 0 }
---*/
// biome-ignore lint/correctness/noUnusedVariables: main() is called by the agent
function main() {
  const kb = {};
  for (const line of read_file("/proc/meminfo").split("\n")) {
    const m = /^(\w+):\s+(\d+)/.exec(line);
    if (m) kb[m[1]] = Number(m[2]) * 1024;
  }
  const total = kb.MemTotal || 0;
  const available =
    kb.MemAvailable !== undefined
      ? kb.MemAvailable
      : (kb.MemFree || 0) + (kb.Buffers || 0) + (kb.Cached || 0);
  const used = Math.max(0, total - available);
  return {
    total_bytes: total,
    available_bytes: available,
    used_bytes: used,
    used_pct: total > 0 ? Math.round((used / total) * 10000) / 100 : 0,
    swap_total_bytes: kb.SwapTotal || 0,
    swap_used_bytes: Math.max(0, (kb.SwapTotal || 0) - (kb.SwapFree || 0)),
  };
}
