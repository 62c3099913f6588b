/**
 * Live updates for the console, across web instances (docs/console.md):
 *
 *   database trigger ── pg_notify('outpost_live', 'devices' | 'device:<id>' | 'rollout:<id>') ──▶ every web instance
 *   (LISTEN, one connection per instance) ──▶ throttled fan-out ──▶ browsers (Server-Sent Events)
 *
 * Notifications name a topic only; PostgreSQL folds identical ones of a transaction, and each
 * instance coalesces a burst into at most one `fleet` event per THROTTLE_MS carrying fresh counts
 * (counted once per instance, not once per browser). Online/offline also changes by time passing
 * with no write at all, so while browsers are connected an instance re-counts every TICK_MS and
 * announces only a change. Heartbeats never notify unless a device turns online.
 */

import type { Clock, ClockTimer } from "../../shared/clock";
import type { FleetCounter, FleetCounts } from "../devices/service";
import type { Database } from "../platform/database";
import type { Logger } from "../platform/logger";

export const LIVE_CHANNEL = "outpost_live";
export const THROTTLE_MS = 1000;
export const TICK_MS = 15_000;
const PING_MS = 15_000;
/** Topics about one thing: `<topic>:<id>` is sent to browsers as event `<topic>` with `{id}`. */
const ID_TOPICS = ["device", "rollout"] as const;

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
  clock: Clock;
  fleetCounts: FleetCounter;
  onlineWindowSeconds(): Promise<number>;
  /** Open alerts (the alerts feature counts them: services.ts hands its count in, so live imports no feature that builds on it). */
  openAlerts(): Promise<number>;
}

export class LiveHub {
  private clients = new Set<LiveClient>();
  private listening: Promise<{ unlisten(): Promise<void> } | undefined> | undefined;
  private fleetTimer: ClockTimer | undefined;
  private topicTimer: ClockTimer | undefined;
  /** `device:<id>` and `rollout:<id>` heard since the last send: one event each per THROTTLE_MS. */
  private pendingTopics = new Set<string>();
  private tick: ClockTimer | undefined;
  private ping: ClockTimer | undefined;
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
    const { clock } = this.options;
    this.tick ??= clock.setInterval(
      () => (this.clients.size > 0 ? this.flushFleet(false) : undefined),
      TICK_MS,
    );
    this.ping ??= clock.setInterval(() => {
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
      this.fleetTimer ??= this.options.clock.setTimeout(() => {
        this.fleetTimer = undefined;
        return this.flushFleet(true);
      }, THROTTLE_MS);
    } else if (ID_TOPICS.some((topic) => payload.startsWith(`${topic}:`))) {
      this.pendingTopics.add(payload);
      this.topicTimer ??= this.options.clock.setTimeout(() => {
        this.topicTimer = undefined;
        const topics = [...this.pendingTopics];
        this.pendingTopics.clear();
        for (const topic of topics) {
          const colon = topic.indexOf(":");
          this.broadcast(topic.slice(0, colon), JSON.stringify({ id: topic.slice(colon + 1) }));
        }
      }, THROTTLE_MS);
    }
  }

  /** Counts the fleet once and sends it to every browser (always after a notification, else on change). */
  private async flushFleet(force: boolean) {
    if (this.closed || this.clients.size === 0) return;
    try {
      const window = await this.options.onlineWindowSeconds();
      const counts = await this.options.fleetCounts.count(window);
      const snapshot: FleetSnapshot = { ...counts, alerts: await this.options.openAlerts() };
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
    this.fleetTimer?.clear();
    this.topicTimer?.clear();
    this.tick?.clear();
    this.ping?.clear();
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
