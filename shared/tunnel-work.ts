import { createHmac } from "node:crypto";
import type { Duplex } from "node:stream";
import type tls from "node:tls";

/**
 * Work connections: the remote-access tunnel's data plane. ssh2 moves bytes in JavaScript (a cipher call
 * and a socket write per 32 KiB packet), about a quarter of a direct download; TLS in Bun's native
 * sockets moves them at twice that. So the agent keeps a few TLS connections open beside its SSH
 * connection, and the server hands each forwarded stream to an idle one (an SSH channel when none is
 * idle). Protocol, one line each way before the raw bytes:
 *
 *   agent → server  `OUTPOST-WORK/1 <token body> <agent proof>`
 *   server → agent  `OK <server proof>`            (or the connection closes: refused)
 *   … idle until …
 *   server → agent  `OPEN http` | `OPEN ssh` | `OPEN tcp:<port>` (a port of the agent's tunnel.forward_ports)
 *   agent → server  `OK`, then the target's bytes both ways (a forward it does not offer: it hangs up).
 *
 * Neither end trusts the TLS certificate. The key is the token's signature (the agent got the token over
 * HTTPS; the server recomputes it from SECRET_KEY), never sent here; each proof is an HMAC under it of
 * this TLS session's exported keying material, which a man in the middle (two sessions) cannot match.
 */
export const WORK_GREETING = "OUTPOST-WORK/1";
export const WORK_HANDSHAKE_MS = 5000;
const EXPORTER_LABEL = "EXPORTER-outpost-tunnel-work";
const MAX_LINE = 2048;

/** No line arrived in time: on a work connection, a frozen peer. */
export class LineTimeout extends Error {}

export function workProof(key: string, role: "agent" | "server", socket: tls.TLSSocket): string {
  const material = socket.exportKeyingMaterial(32, EXPORTER_LABEL, Buffer.alloc(0)).toString("hex");
  return createHmac("sha256", key).update(`${role}:${material}`).digest("hex");
}

/**
 * Reads one `\n`-terminated line (at most 2 KiB) and puts back what followed it, so a later pipe sees
 * every byte. Rejects on close, on an over-long line, or after `timeoutMs` (none when undefined).
 */
export function readLine(socket: Duplex, timeoutMs?: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered: Buffer = Buffer.alloc(0);
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => fail(new LineTimeout("no line in time")), timeoutMs);
    const done = () => {
      clearTimeout(timer);
      socket.off("readable", onReadable);
      socket.off("close", onClose);
    };
    const fail = (error: Error) => {
      done();
      reject(error);
    };
    const onClose = () => fail(new Error("the connection closed"));
    const onReadable = () => {
      for (let chunk = socket.read() as Buffer | null; chunk !== null; chunk = socket.read()) {
        buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
        const end = buffered.indexOf(10);
        if (end >= 0) {
          done();
          if (end + 1 < buffered.length) socket.unshift(buffered.subarray(end + 1));
          return resolve(buffered.subarray(0, end).toString("utf8"));
        }
        if (buffered.length > MAX_LINE) return fail(new Error("line too long"));
      }
    };
    socket.on("readable", onReadable);
    socket.on("close", onClose);
    onReadable();
  });
}
