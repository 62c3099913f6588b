import { createHmac } from "node:crypto";
import type { Duplex } from "node:stream";
import tls from "node:tls";

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
 *   server → agent  `OPEN http` | `OPEN ssh`
 *   agent → server  `OK`, then the target's bytes both ways.
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
/** Idle work connections the agent keeps: a download, a WebSocket and a page's requests at once. */
export const WORK_POOL_SIZE = 4;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;

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

export interface WorkPoolOptions {
  host: string;
  port: number;
  /** The newest tunnel token (`<body>.<signature>`), or undefined once remote access ended. */
  token(): string | undefined;
  /** Connects a forward's target on the device (`http` → the web UI, `ssh` → sshd). */
  openTarget(forward: "http" | "ssh"): Duplex;
  logger: { warn(obj: unknown, msg?: string): void };
}

/**
 * The agent's idle work connections to one tunnel server. Keeps WORK_POOL_SIZE authenticated and idle;
 * one taken for a stream is replaced at once. Connections that fail before they are ready back off
 * (a server without the data plane, a firewall): the SSH channels carry everything meanwhile.
 */
export class WorkPool {
  private readonly idle = new Set<tls.TLSSocket>();
  private readonly open = new Set<tls.TLSSocket>();
  private opening = 0;
  private failures = 0;
  /** Whether this streak of failures was logged (a blocked port would otherwise log every step). */
  private warned = false;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(private readonly options: WorkPoolOptions) {}

  start(): void {
    this.fill();
  }

  /** Closes every work connection, idle or carrying a stream (the tunnel is going down). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    for (const socket of this.open) socket.destroy();
  }

  get idleCount(): number {
    return this.idle.size;
  }

  private fill() {
    while (!this.stopped && !this.retry && this.idle.size + this.opening < WORK_POOL_SIZE) this.connect();
  }

  private backOff() {
    if (this.stopped || this.retry) return;
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this.failures++);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.fill();
    }, delay);
    this.retry.unref?.();
  }

  private connect() {
    this.opening++;
    let ready = false;
    const { host, port } = this.options;
    // The certificate proves nothing here (see the protocol above), so it is not checked.
    const socket = tls.connect({ host, port, rejectUnauthorized: false, minVersion: "TLSv1.3" });
    this.open.add(socket);
    socket.setKeepAlive(true, 30_000);
    socket.on("error", () => {});
    socket.on("close", () => {
      this.open.delete(socket);
      this.idle.delete(socket);
      if (!ready) {
        this.opening--;
        this.backOff();
      } else this.fill();
    });
    const authenticated = () => {
      ready = true;
      this.opening--;
      this.failures = 0;
      this.warned = false;
      this.idle.add(socket);
    };
    socket.once("secureConnect", () => {
      this.handshake(socket, authenticated).then(
        (forward) => {
          this.idle.delete(socket);
          this.fill();
          this.carry(socket, forward);
        },
        (error: Error) => {
          if (!ready && !this.stopped && !this.warned) {
            this.warned = true;
            this.options.logger.warn({ error: error.message }, "remote-access data connection refused");
          }
          socket.destroy();
        },
      );
    });
  }

  /** Authenticates both ends, waits idle until the server asks for a forward, and returns its name. */
  private async handshake(socket: tls.TLSSocket, authenticated: () => void): Promise<"http" | "ssh"> {
    const token = this.options.token();
    const dot = token?.indexOf(".") ?? -1;
    if (!token || dot <= 0) throw new Error("no tunnel token");
    const [body, key] = [token.slice(0, dot), token.slice(dot + 1)];
    socket.write(`${WORK_GREETING} ${body} ${workProof(key, "agent", socket)}\n`);
    const answer = await readLine(socket, WORK_HANDSHAKE_MS);
    if (answer !== `OK ${workProof(key, "server", socket)}`)
      throw new Error("the tunnel data server did not prove it knows this device's token");
    authenticated();
    const request = await readLine(socket);
    const forward = /^OPEN (http|ssh)$/.exec(request)?.[1];
    if (!forward) throw new Error(`unexpected request on a data connection: ${request.slice(0, 40)}`);
    return forward as "http" | "ssh";
  }

  /** Joins the work connection to the forward's target; orderly ends propagate, errors destroy both. */
  private carry(socket: tls.TLSSocket, forward: "http" | "ssh") {
    const upstream = this.options.openTarget(forward);
    socket.write("OK\n");
    upstream.on("error", () => socket.destroy());
    socket.on("error", () => upstream.destroy());
    socket.pipe(upstream);
    upstream.pipe(socket);
    upstream.on("close", () => socket.end());
  }
}
