/*---
name: uptime
version: 1
description: Host uptime and aggregate idle time from /proc/uptime.
schema:
  type: object
  required: [uptime_s]
  properties:
    uptime_s: { type: number, minimum: 0 }
    idle_s: { type: number, minimum: 0 }
---*/
// biome-ignore lint/correctness/noUnusedVariables: main() is called by the agent
function main() {
  const [uptime, idle] = read_file("/proc/uptime").trim().split(/\s+/).map(Number);
  return { uptime_s: uptime, idle_s: idle };
}
