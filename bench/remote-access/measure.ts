/** What the remote-access benchmarks measure with: a ticket's cookie, a raw GET, CPU time per process, percentiles. */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import net from "node:net";

/** The device's access cookie from a ticket redeemed at the front on `portNumber` (as "Open web UI"). */
export async function redeemTicketAt(portNumber: number, host: string, ticket: string): Promise<string> {
  const reply = await new Promise<string>((resolve) => {
    const socket = net.connect(portNumber, "127.0.0.1", () =>
      socket.write(`GET /.outpost/auth?ticket=${ticket} HTTP/1.1\r\nHost: ${host}\r\n\r\n`),
    );
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk;
    });
    socket.on("close", () => resolve(text));
  });
  return /set-cookie: ([^;\r\n]+)/i.exec(reply)![1]!;
}

/** Raw GET; resolves status, body byte count, SHA-256 and milliseconds (the front closes after one). */
export function rawGet(portNumber: number, host: string, pathname: string, cookie = "") {
  return new Promise<{ status: number; bytes: number; sha: string; ms: number }>((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(portNumber, "127.0.0.1");
    const hash = createHash("sha256");
    let head = Buffer.alloc(0);
    let status = 0;
    let bytes = 0;
    let length = -1;
    socket.on("connect", () =>
      socket.write(
        `GET ${pathname} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n${cookie ? `Cookie: ${cookie}\r\n` : ""}\r\n`,
      ),
    );
    socket.on("data", (chunk: Buffer) => {
      if (status === 0) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) return;
        const text = head.subarray(0, end).toString();
        status = Number(text.slice(9, 12));
        length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? -1);
        chunk = head.subarray(end + 4);
      }
      hash.update(chunk);
      bytes += chunk.length;
      if (length >= 0 && bytes >= length) socket.end();
    });
    socket.on("error", reject);
    socket.on("close", () =>
      resolve({ status, bytes, sha: hash.digest("hex"), ms: performance.now() - started }),
    );
  });
}

/** CPU time (user + system) of a process so far, in ms, from /proc (clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime (fields 14 and 15)
}

/** Runs `work` and reports the CPU each named process and this client spent on it (ms). */
export async function withCpu<T>(pids: Record<string, number>, work: () => Promise<T>) {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMsOf(pid)]));
  const client = process.cpuUsage();
  const result = await work();
  const spent: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) spent[name] = cpuMsOf(pid) - before[name]!;
  const used = process.cpuUsage(client);
  spent.client = (used.user + used.system) / 1000;
  return [result, spent] as const;
}

/** "outpost 520, agent 610, …" per 100 MB, leaving out processes that did (next to) nothing. */
export const cpuLine = (spent: Record<string, number>, mb: number) =>
  Object.entries(spent)
    .filter(([, ms]) => ms >= 20)
    .map(([name, ms]) => `${name} ${((ms * 100) / mb).toFixed(0)}`)
    .join(", ");

export const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
