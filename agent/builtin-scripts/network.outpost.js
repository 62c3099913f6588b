/*---
name: network
version: 1
description: Byte, packet and error counters per network interface from /proc/net/dev (totals exclude loopback).
schema:
  type: object
  required: [rx_bytes_total, tx_bytes_total, interfaces]
  properties:
    rx_bytes_total: { type: integer, minimum: 0 }
    tx_bytes_total: { type: integer, minimum: 0 }
    interfaces:
      type: object
      additionalProperties:
        type: object
        required: [rx_bytes, tx_bytes]
        properties:
          rx_bytes: { type: integer, minimum: 0 }
          rx_packets: { type: integer, minimum: 0 }
          rx_errors: { type: integer, minimum: 0 }
          rx_dropped: { type: integer, minimum: 0 }
          tx_bytes: { type: integer, minimum: 0 }
          tx_packets: { type: integer, minimum: 0 }
          tx_errors: { type: integer, minimum: 0 }
          tx_dropped: { type: integer, minimum: 0 }
---*/
// biome-ignore lint/correctness/noUnusedVariables: main() is called by the agent
function main() {
  const interfaces = {};
  let rx = 0;
  let tx = 0;
  for (const line of read_file("/proc/net/dev").split("\n").slice(2)) {
    const m = /^\s*([^:\s]+):\s*(.*)$/.exec(line);
    if (!m) continue;
    const f = m[2].trim().split(/\s+/).map(Number);
    interfaces[m[1]] = {
      rx_bytes: f[0],
      rx_packets: f[1],
      rx_errors: f[2],
      rx_dropped: f[3],
      tx_bytes: f[8],
      tx_packets: f[9],
      tx_errors: f[10],
      tx_dropped: f[11],
    };
    if (m[1] !== "lo") {
      rx += f[0];
      tx += f[8];
    }
  }
  return { rx_bytes_total: rx, tx_bytes_total: tx, interfaces };
}
