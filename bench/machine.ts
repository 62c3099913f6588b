/** What several benchmarks share: their numeric flags, the machine line they start with, a free port. */
import net from "node:net";
import os from "node:os";

/** `--name N` on the command line, held to [min, max]; the fallback without it. */
export function numberFlag(name: string, fallback: number, min: number, max: number): number {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Math.max(min, Math.min(max, value));
}

/** "machine: 2 CPUs, load average 0.52 0.40 0.31": a figure is read against how busy the machine was. */
export function machineLine(): string {
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
  return `machine: ${os.cpus().length} CPUs, load average ${load}`;
}

/** A TCP port on loopback that nothing listens on just now. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}
