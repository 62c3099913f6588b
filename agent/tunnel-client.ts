import { createHash } from "node:crypto";
import { lookup } from "node:dns/promises";
import net from "node:net";
import type { Duplex } from "node:stream";
import tls from "node:tls";
import type { Client } from "ssh2";
import type { TunnelConfig } from "./config.ts";
import type { ConnectionStatus, TunnelController } from "./tunnel.ts";
import { WorkPool } from "./tunnel-work.ts";

interface Logger {
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
}

const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
/** The pause before trying the next tunnel server while some of the list are still untried. */
const FAILOVER_MS = 300;

/** Claims of a tunnel token, read without verifying (the server verifies; we only need device and expiry). */
export function tokenClaims(token: string): { d: string; exp: number } | undefined {
  try {
    const claims = JSON.parse(Buffer.from(token.split(".")[0] ?? "", "base64url").toString("utf8"));
    return typeof claims?.d === "string" && typeof claims?.exp === "number" ? claims : undefined;
  } catch {
    return undefined;
  }
}

/** `SHA256:<base64>` of a host key blob, as the server announces it (and `ssh-keygen -l` prints it). */
export function fingerprintOf(key: Buffer): string {
  return `SHA256:${createHash("sha256").update(key).digest("base64").replace(/=+$/, "")}`;
}

interface Endpoint {
  host: string;
  port: number;
}

/**
 * The tunnel servers: `tunnel.server`'s comma-separated `host:port`s, else the server_url host on port
 * 7000. Any of them serves the device (several tunnel processes, docs/remote-access.md).
 */
export function tunnelServers(config: TunnelConfig, serverUrl: string): Endpoint[] {
  if (!config.server) return [{ host: new URL(serverUrl).hostname.replace(/^\[|\]$/g, ""), port: 7000 }];
  return config.server.split(",").map((entry) => {
    const trimmed = entry.trim();
    const index = trimmed.lastIndexOf(":");
    return { host: trimmed.slice(0, index), port: Number(trimmed.slice(index + 1)) };
  });
}

/**
 * Every address to try, in order: each server's host resolved to all its addresses (a DNS name naming
 * several tunnel processes), a name that does not resolve kept as it is (the connection says why).
 */
export async function tunnelAddresses(servers: Endpoint[]): Promise<Endpoint[]> {
  const resolved = await Promise.all(
    servers.map(async ({ host, port }) => {
      if (net.isIP(host)) return [{ host, port }];
      const addresses = await lookup(host, { all: true }).catch(() => []);
      return addresses.length === 0 ? [{ host, port }] : addresses.map((a) => ({ host: a.address, port }));
    }),
  );
  return [...new Map(resolved.flat().map((e) => [`${e.host}:${e.port}`, e])).values()];
}

/**
 * The remote-access tunnel client (reference §3.6 rules): start when a token arrives and the tunnel is
 * down; stop when the token is gone; restart when the token in use expired or the server changed, but
 * NOT on every token refresh (the fresh token is kept for the next reconnect). When the connection
 * goes or fails it tries the next tunnel server address within FAILOVER_MS, and backs off exponentially
 * only once every address failed in a row. Pins the server host key fingerprint from the heartbeat
 * reply (every tunnel process shares one host key).
 */
export class TunnelClient implements TunnelController {
  private client: Client | undefined;
  private work: WorkPool | undefined;
  private token: string | undefined;
  private connectedWith: { token: string; server: string } | undefined;
  private pinned: string | undefined;
  private current: ConnectionStatus = { state: "disconnected", active: false };
  onChange?: (status: ConnectionStatus) => void;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private failures = 0;
  /** Which address the next connection tries (it moves on after every close or failure). */
  private next = 0;
  /** Addresses of the latest resolution (the back-off starts once each of them failed). */
  private addressCount = 1;
  /** Bumped by every connect and disconnect: a resolution that finishes after either is dropped. */
  private generation = 0;

  constructor(
    private readonly config: TunnelConfig,
    private readonly serverUrl: string,
    private readonly logger: Logger,
  ) {}

  status(): ConnectionStatus {
    return { ...this.current };
  }

  private get state(): ConnectionStatus {
    return this.current;
  }

  private set state(next: ConnectionStatus) {
    this.current = next;
    this.onChange?.({ ...next });
  }

  async apply(remoteAccessToken: string | undefined, hostKey?: string): Promise<void> {
    if (!remoteAccessToken) return this.stop();
    this.token = remoteAccessToken;
    if (hostKey) this.pinned = hostKey;
    const server = this.serverKey();
    const inUse = this.connectedWith;
    const expired = inUse ? (tokenClaims(inUse.token)?.exp ?? 0) * 1000 <= Date.now() : false;
    if (this.client && inUse && inUse.server === server && !expired) return; // a refresh: keep the tunnel
    if (this.client) this.disconnect();
    if (this.retry) return; // a reconnect is scheduled; it will use the newest token
    this.connect();
  }

  async stop(): Promise<void> {
    this.token = undefined;
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    this.failures = 0;
    this.disconnect();
    this.state = { state: "disconnected", active: false };
  }

  private serverKey(): string {
    return tunnelServers(this.config, this.serverUrl)
      .map(({ host, port }) => `${host}:${port}`)
      .join(",");
  }

  /** Lets go of the connection in use and its data plane. */
  private forget() {
    this.client = undefined;
    this.connectedWith = undefined;
    this.work?.stop();
    this.work = undefined;
  }

  private disconnect() {
    this.generation++;
    const client = this.client;
    this.forget();
    client?.removeAllListeners("close");
    client?.on("error", () => {});
    client?.end();
    setTimeout(() => client?.destroy(), 2000).unref();
  }

  private connect() {
    const token = this.token;
    const claims = token ? tokenClaims(token) : undefined;
    if (!token) return;
    if (!claims) {
      const error = "the server sent a remote_access_token that is not a tunnel token; no tunnel started";
      if (this.state.error !== error) this.logger.warn(error);
      this.state = { state: "disconnected", active: false, error };
      return;
    }
    const generation = ++this.generation;
    this.state = { state: "connecting", active: false, error: this.state.error };
    void tunnelAddresses(tunnelServers(this.config, this.serverUrl)).then((addresses) => {
      if (generation !== this.generation || !this.token || this.client) return;
      this.addressCount = addresses.length;
      this.dial(addresses[this.next++ % addresses.length]!, this.token, claims.d);
    });
  }

  private dial({ host, port }: Endpoint, token: string, deviceId: string) {
    // Loaded on the first tunnel, not at start: most devices never open one, and ssh2 costs memory.
    const { Client: SshClient } = require("ssh2") as typeof import("ssh2");
    const client = new SshClient();
    this.client = client;
    this.connectedWith = { token, server: this.serverKey() };
    let failure: string | undefined;
    client.on("ready", () => {
      this.failures = 0;
      // The data plane (agent/tunnel-work.ts): a server without one refuses, the SSH channels carry all.
      client.forwardIn("data", 0, (error, dataPort) => {
        if (error || !dataPort || this.client !== client) return;
        this.work = new WorkPool({
          host,
          port: dataPort,
          token: () => this.token,
          openTarget: (forward) => this.openTarget(forward),
          logger: this.logger,
        });
        this.work.start();
      });
      const names = ["http", "ssh", ...this.forwardPorts().map((port) => `tcp:${port}`)];
      let pending = names.length;
      for (const name of names) {
        client.forwardIn(name, 0, (error) => {
          if (error) failure = `the server refused the ${name} forward`;
          if (--pending === 0 && this.client === client) {
            this.state = {
              state: "connected",
              active: true,
              since: new Date().toISOString(),
              error: failure,
            };
            this.logger.info({ server: `${host}:${port}` }, "remote-access tunnel connected");
          }
        });
      }
    });
    client.on("tcp connection", (info, accept, reject) => {
      if (!this.offers(info.destIP)) return reject();
      const channel = accept();
      const upstream = this.openTarget(info.destIP);
      upstream.on("error", () => channel.destroy());
      channel.on("error", () => upstream.destroy());
      // Orderly ends propagate; destroying on close would drop queued bytes (truncated downloads).
      channel.pipe(upstream);
      upstream.pipe(channel);
      upstream.on("close", () => channel.end());
    });
    client.on("error", (error) => {
      failure = failure ?? error.message; // the first cause (e.g. the host key) explains the rest
    });
    client.on("close", () => {
      if (this.client !== client) return;
      this.forget();
      const message = failure ?? "the tunnel connection closed";
      this.state = { state: "disconnected", active: false, error: message };
      if (!this.token) return;
      // The next address at once while some are untried in this streak; then exponential back-off.
      const round = this.failures++ - (this.addressCount - 1);
      const delay = round < 0 ? FAILOVER_MS : Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** round);
      this.logger.warn(
        { error: message, server: `${host}:${port}`, retry_in_ms: delay },
        "remote-access tunnel down; reconnecting",
      );
      this.retry = setTimeout(() => {
        this.retry = undefined;
        this.connect();
      }, delay);
      this.retry.unref?.();
    });
    const pinned = this.pinned;
    client.connect({
      host,
      port,
      username: `dev-${deviceId.replace(/-/g, "")}`,
      password: token,
      readyTimeout: 10_000,
      keepaliveInterval: 10_000,
      keepaliveCountMax: 3,
      hostVerifier: (key: Buffer) => {
        const ok = pinned !== undefined && fingerprintOf(key) === pinned;
        if (!ok) failure = "the tunnel server's host key does not match the pinned fingerprint";
        return ok;
      },
    });
  }

  /** `tunnel.forward_ports`, but 22: the device's sshd is the `ssh` forward, with its own rules. */
  private forwardPorts(): number[] {
    return (this.config.forward_ports ?? []).filter((port) => port !== 22);
  }

  /** Whether a forward name is one this agent offers: `http`, `ssh`, or `tcp:<a port of forward_ports>`. */
  private offers(forward: string): boolean {
    if (forward === "http" || forward === "ssh") return true;
    const port = /^tcp:(\d{1,5})$/.exec(forward)?.[1];
    return port !== undefined && this.forwardPorts().includes(Number(port));
  }

  /**
   * Connects a forward's target on the device: `http` → the web UI, `ssh` → sshd, `tcp:<port>` →
   * 127.0.0.1:<port> when `tunnel.forward_ports` lists it (the server asks only for those; a forward this
   * agent does not offer is refused here too, whatever the server says).
   */
  private openTarget(forward: string): Duplex {
    if (!this.offers(forward)) throw new Error(`${forward} is not a forward this agent offers`);
    if (forward.startsWith("tcp:")) return net.connect(Number(forward.slice(4)), "127.0.0.1");
    if (forward === "ssh") {
      const index = this.config.ssh_target.lastIndexOf(":");
      return net.connect(
        Number(this.config.ssh_target.slice(index + 1)),
        this.config.ssh_target.slice(0, index),
      );
    }
    const url = new URL(this.config.web_target);
    const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
    const host = url.hostname.replace(/^\[|\]$/g, "");
    // Device UIs on https (Cockpit on 9090) use self-signed certificates: the tunnel is the trust boundary.
    return url.protocol === "https:"
      ? tls.connect({ host, port, rejectUnauthorized: false, servername: net.isIP(host) ? undefined : host })
      : net.connect(port, host);
  }
}
