/**
 * Live updates for the console, across web instances (docs/console.md):
 *
 *   database trigger ── pg_notify('outpost_live', 'devices' | 'device:<id>') ──▶ every web instance
 *   (LISTEN, one connection per instance) ──▶ throttled fan-out ──▶ browsers (Server-Sent Events)
 *
 * Notifications name a topic only; PostgreSQL folds identical ones of a transaction, and each
 * instance coalesces a burst into at most one `fleet` event per THROTTLE_MS carrying fresh counts
 * (counted once per instance, not once per browser). Online/offline also changes by time passing
 * with no write at all, so while browsers are connected an instance re-counts every TICK_MS and
 * announces only a change. Heartbeats never notify unless a device turns online.
 */

import { countOpenAlerts } from "../alerts";
import { countFleet, type FleetCounts } from "../devices/service";
import type { Database } from "../platform/database";
import type { Logger } from "../platform/logger";

export const LIVE_CHANNEL = "outpost_live";
export const THROTTLE_MS = 1000;
export const TICK_MS = 15_000;
const PING_MS = 15_000;

export interface LiveClient {
  send(event: string, data: string): void;
  comment(text: string): void;
  close(): void;
}

/** What the dashboard cards show: the device counts, plus open alerts. */
export type FleetSnapshot = FleetCounts & { alerts: number };

export interface LiveHubOptions {
  database: Database;
  logger: Logger;
  onlineWindowSeconds(): Promise<number>;
  /** How often to re-count while browsers are connected (default TICK_MS; tests shorten it). */
  tickMs?: number;
}

const tickOverrides = new WeakMap<object, number>();

/**
 * Shortens the re-count interval of the app started with this config (tests: going offline then
 * shows within a second instead of 15 s). Takes effect for a hub created afterwards, i.e. before
 * the first browser connects.
 */
export function setLiveTickMs(config: object, ms: number): void {
  tickOverrides.set(config, ms);
}

/** The re-count interval for the app of this config. */
export function liveTickMs(config: object): number {
  return tickOverrides.get(config) ?? TICK_MS;
}

export class LiveHub {
  private clients = new Set<LiveClient>();
  private listening: Promise<{ unlisten(): Promise<void> } | undefined> | undefined;
  private fleetTimer: ReturnType<typeof setTimeout> | undefined;
  private deviceTimer: ReturnType<typeof setTimeout> | undefined;
  private pendingDevices = new Set<string>();
  private tick: ReturnType<typeof setInterval> | undefined;
  private ping: ReturnType<typeof setInterval> | undefined;
  private last = "";
  private closed = false;

  constructor(private options: LiveHubOptions) {}

  get size(): number {
    return this.clients.size;
  }

  /** Adds a browser; returns its unsubscribe. Starts listening on the first one. */
  subscribe(client: LiveClient): () => void {
    if (this.closed) {
      client.close();
      return () => {};
    }
    this.clients.add(client);
    if (!this.listening) {
      // A change committed while LISTEN was being set up sends no notification we could hear:
      // recount once listening, so the first browser never misses it.
      this.listening = this.listen();
      void this.listening.then(() => this.flushFleet(true));
    }
    this.tick ??= setInterval(() => {
      if (this.clients.size > 0) void this.flushFleet(false);
    }, this.options.tickMs ?? TICK_MS);
    this.ping ??= setInterval(() => {
      for (const c of this.clients) c.comment("ping");
    }, PING_MS);
    return () => {
      this.clients.delete(client);
    };
  }

  private async listen() {
    try {
      return await this.options.database.sql.listen(LIVE_CHANNEL, (payload) => this.onNotify(payload));
    } catch (error) {
      this.options.logger.warn({ err: error }, "live updates: LISTEN failed");
      this.listening = undefined;
      return undefined;
    }
  }

  /** Handles one notification (also called directly by tests and same-process writers). */
  onNotify(payload: string): void {
    if (payload === "devices") {
      this.fleetTimer ??= setTimeout(() => {
        this.fleetTimer = undefined;
        void this.flushFleet(true);
      }, THROTTLE_MS);
    } else if (payload.startsWith("device:")) {
      this.pendingDevices.add(payload.slice(7));
      this.deviceTimer ??= setTimeout(() => {
        this.deviceTimer = undefined;
        const ids = [...this.pendingDevices];
        this.pendingDevices.clear();
        for (const id of ids) this.broadcast("device", JSON.stringify({ id }));
      }, THROTTLE_MS);
    }
  }

  /** Counts the fleet once and sends it to every browser (always after a notification, else on change). */
  private async flushFleet(force: boolean) {
    if (this.closed || this.clients.size === 0) return;
    try {
      const window = await this.options.onlineWindowSeconds();
      const counts = await countFleet(this.options.database.sql, window);
      const snapshot: FleetSnapshot = { ...counts, alerts: await countOpenAlerts(this.options.database.sql) };
      const data = JSON.stringify(snapshot);
      if (!force && data === this.last) return;
      this.last = data;
      this.broadcast("fleet", data);
    } catch (error) {
      if (!this.closed) this.options.logger.warn({ err: error }, "live updates: counting failed");
    }
  }

  private broadcast(event: string, data: string) {
    for (const client of this.clients) {
      try {
        client.send(event, data);
      } catch {
        this.clients.delete(client);
      }
    }
  }

  /** Ends every stream and stops listening (before HTTP stops, so no stream holds it open). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.fleetTimer);
    clearTimeout(this.deviceTimer);
    clearInterval(this.tick);
    clearInterval(this.ping);
    for (const client of this.clients) {
      try {
        client.close();
      } catch {}
    }
    this.clients.clear();
    const listener = await this.listening?.catch(() => undefined);
    await listener?.unlisten().catch(() => {});
  }
}

const hubs = new WeakMap<Database, LiveHub>();

/** The one hub of this process for a database (created on first use). */
export function liveHubFor(options: LiveHubOptions): LiveHub {
  let hub = hubs.get(options.database);
  if (!hub) {
    hub = new LiveHub(options);
    hubs.set(options.database, hub);
  }
  return hub;
}

/** Closes the hub of a database, if one was started (app shutdown). */
export async function closeLiveHub(database: Database): Promise<void> {
  const hub = hubs.get(database);
  hubs.delete(database);
  await hub?.close();
}
