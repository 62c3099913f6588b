import type { Duplex } from "node:stream";
import tls from "node:tls";
import { type Clock, type ClockTimer, systemClock } from "../shared/clock.ts";
import { readLine, WORK_GREETING, WORK_HANDSHAKE_MS, workProof } from "../shared/tunnel-work.ts";

// The agent's end of the work connections; the protocol both ends speak is shared/tunnel-work.ts.

/** Idle work connections the agent keeps: a download, a WebSocket and a page's requests at once. */
export const WORK_POOL_SIZE = 4;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;

export interface WorkPoolOptions {
  host: string;
  port: number;
  /** The newest tunnel token (`<body>.<signature>`), or undefined once remote access ended. */
  token(): string | undefined;
  /**
   * Connects a forward's target on the device (`http` → the web UI, `ssh` → sshd, `tcp:<port>` → a port
   * of `tunnel.forward_ports`); throws for a forward the agent does not offer.
   */
  openTarget(forward: string): Duplex;
  logger: { warn(obj: unknown, msg?: string): void };
  /** The back-off's timers (tests move it on). */
  clock?: Clock;
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
  private retry: ClockTimer | undefined;
  private stopped = false;

  constructor(private readonly options: WorkPoolOptions) {}

  start(): void {
    this.fill();
  }

  /** Closes every work connection, idle or carrying a stream (the tunnel is going down). */
  stop(): void {
    this.stopped = true;
    this.retry?.clear();
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
    this.retry = (this.options.clock ?? systemClock).setTimeout(() => {
      this.retry = undefined;
      this.fill();
    }, delay);
  }

  private connect() {
    this.opening++;
    let ready = false;
    const { host, port } = this.options;
    // The certificate proves nothing here (see the protocol above), so it is not checked.
    const socket = tls.connect({
      host,
      port,
      rejectUnauthorized: false,
      minVersion: "TLSv1.3",
      allowHalfOpen: true,
    } as tls.ConnectionOptions);
    this.open.add(socket);
    // The server's end of sending ends ours (as without half-open), except on a forwarded TCP port,
    // whose client may stop sending and still read the answer.
    let halfOpen = false;
    socket.on("end", () => {
      if (!halfOpen) socket.end();
    });
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
          halfOpen = forward.startsWith("tcp:");
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
  private async handshake(socket: tls.TLSSocket, authenticated: () => void): Promise<string> {
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
    const forward = /^OPEN (http|ssh|tcp:\d{1,5})$/.exec(request)?.[1];
    if (!forward) throw new Error(`unexpected request on a data connection: ${request.slice(0, 40)}`);
    return forward;
  }

  /** Joins the work connection to the forward's target; orderly ends propagate, errors destroy both. */
  private carry(socket: tls.TLSSocket, forward: string) {
    let upstream: Duplex;
    try {
      upstream = this.options.openTarget(forward);
    } catch {
      socket.destroy(); // not offered: the server hears a hang-up instead of OK
      return;
    }
    socket.write("OK\n");
    upstream.on("error", () => socket.destroy());
    socket.on("error", () => upstream.destroy());
    socket.pipe(upstream);
    upstream.pipe(socket);
    upstream.on("close", () => socket.end());
  }
}
