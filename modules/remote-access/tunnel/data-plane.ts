import type { Duplex } from "node:stream";
import tls from "node:tls";
import { readLine, WORK_GREETING, WORK_HANDSHAKE_MS, workProof } from "../../../shared/tunnel-work";
import { constantTimeEqual } from "../../platform/crypto";
import type { Logger } from "../../platform/logger";
import { signatureOf, unexpiredClaims } from "../token";
import { selfSignedCertificate } from "./certificate";
import type { TunnelRegistry } from "./registry";

/** Work connections carrying a forwarded TCP port: half-close passes through them. */
const halfOpen = new WeakSet<tls.TLSSocket>();

/** Idle work connections kept per device; more are refused (an agent keeps WORK_POOL_SIZE). */
const MAX_IDLE_PER_DEVICE = 8;

/**
 * A device's work connections in this process (shared/tunnel-work.ts has the protocol): idle ones wait
 * to carry a stream; every one, idle or carrying, is closed with the device's tunnel.
 */
export class WorkConnections {
  /** Idle connections, each with the listener that keeps reading it while it waits. */
  private readonly idle = new Map<tls.TLSSocket, () => void>();
  private readonly all = new Set<tls.TLSSocket>();
  private closed = false;

  /** Adopts an authenticated connection; false when closed or full (the caller drops it). */
  add(socket: tls.TLSSocket): boolean {
    if (this.closed || this.idle.size >= MAX_IDLE_PER_DEVICE) return false;
    // Read while idle, or the agent's hang-up would go unnoticed; an idle connection carries nothing.
    const onIdleData = () => socket.destroy();
    socket.on("data", onIdleData);
    this.idle.set(socket, onIdleData);
    this.all.add(socket);
    socket.on("close", () => {
      this.idle.delete(socket);
      this.all.delete(socket);
    });
    return true;
  }

  /** An idle connection, no longer idle (paused, for the hand-off to read), or undefined. */
  take(): tls.TLSSocket | undefined {
    for (const [socket, onIdleData] of this.idle) {
      this.idle.delete(socket);
      socket.off("data", onIdleData);
      socket.pause();
      if (!socket.destroyed) return socket;
    }
    return undefined;
  }

  get idleCount(): number {
    return this.idle.size;
  }

  /** Open connections, idle or carrying a stream. */
  get size(): number {
    return this.all.size;
  }

  closeAll(): void {
    this.closed = true;
    for (const socket of this.all) socket.destroy();
  }
}

/**
 * Asks the agent at the other end of a work connection to join it to `forward`. Resolves the stream
 * once the agent says OK; rejects when it does not within `timeoutMs` (a frozen device) or hangs up.
 */
export async function openWork(socket: tls.TLSSocket, forward: string, timeoutMs: number): Promise<Duplex> {
  // A forwarded TCP port keeps half-close: its client's end of sending must not cut the device's answer
  // (over an SSH channel too: stream.ts keepHalfOpen).
  if (forward.startsWith("tcp:")) halfOpen.add(socket);
  socket.write(`OPEN ${forward}\n`);
  const answer = await readLine(socket, timeoutMs).catch((error: Error) => {
    socket.destroy();
    throw error;
  });
  if (answer !== "OK") {
    socket.destroy();
    throw new Error(`the device answered ${JSON.stringify(answer.slice(0, 40))}`);
  }
  return socket;
}

export interface DataServerOptions {
  secretKey: string;
  registry: TunnelRegistry;
  logger: Logger;
}

/**
 * The tunnel's data-plane listener (TUNNEL_DATA_PORT). It takes a work connection only from the agent
 * of a device whose SSH tunnel is up in this process, proven with that device's current token.
 */
export function createDataServer(options: DataServerOptions): tls.Server {
  const server = tls.createServer(
    {
      ...selfSignedCertificate("outpost-tunnel-data"),
      minVersion: "TLSv1.3",
      handshakeTimeout: WORK_HANDSHAKE_MS,
      allowHalfOpen: true,
    },
    (socket) => {
      socket.on("error", () => {});
      // The agent's end of sending ends ours too (a hang-up while idle, the end of an http or ssh
      // stream), as without half-open; only a forwarded TCP port's stream stays half-open.
      socket.on("end", () => {
        if (!halfOpen.has(socket)) socket.end();
      });
      accept(socket, options).then(
        (device) => device || socket.destroy(),
        () => socket.destroy(),
      );
    },
  );
  server.on("tlsClientError", () => {});
  return server;
}

/** Runs the handshake; resolves the device id when the connection was adopted, undefined otherwise. */
async function accept(socket: tls.TLSSocket, options: DataServerOptions): Promise<string | undefined> {
  const [greeting, body, proof, extra] = (await readLine(socket, WORK_HANDSHAKE_MS)).split(" ");
  if (greeting !== WORK_GREETING || !body || !proof || extra !== undefined) return undefined;
  const key = signatureOf(options.secretKey, "tunnel", body);
  // The proof below shows the agent holds this signature; the claims need only be current.
  const claims = unexpiredClaims(body);
  const tunnel = claims ? options.registry.get(claims.d) : undefined;
  if (!tunnel || !constantTimeEqual(proof, workProof(key, "agent", socket))) return undefined;
  if (!tunnel.work.add(socket)) return undefined;
  socket.write(`OK ${workProof(key, "server", socket)}\n`);
  socket.setKeepAlive(true, 30_000);
  return tunnel.deviceId;
}
