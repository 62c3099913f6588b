/**
 * The long-lived services of one Outpost process, built once here and handed to every part that needs
 * them: the web routes (through the app context, app.ts), the job worker (every task's context) and
 * tests (`TestApp.services`). Nothing else keeps per-process state: no module-level registry keyed by
 * a config or a database connection (`scripts/check-registries.ts`, run by `npm run check`).
 */
import { systemWebhookTransport, type WebhookTransport } from "./modules/alerts/notifications/webhook";
import { FleetCounter } from "./modules/devices/service";
import { DeviceWaits } from "./modules/devices/wake";
import { JourneyHealthCache } from "./modules/e2e/health";
import { LiveHub } from "./modules/live/hub";
import type { Config } from "./modules/platform/config";
import type { Database } from "./modules/platform/database";
import type { Logger } from "./modules/platform/logger";
import { ReportOptionsCache } from "./modules/reports/definitions";
import { SettingsService } from "./modules/settings/service";
import { type Clock, systemClock } from "./shared/clock";

export interface Services {
  config: Config;
  database: Database;
  logger: Logger;
  /** Time for everything with a cache or a timer (tests move it: tests/helpers/clock.ts). */
  clock: Clock;
  /** The device settings, cached for the heartbeat path; saves through it are seen at once. */
  settings: SettingsService;
  /** The fleet's totals, remembered for a large fleet. */
  fleetCounts: FleetCounter;
  /** Live updates to browsers (one LISTEN connection, started by the first browser). */
  liveHub: LiveHub;
  /** Agents' held waits (one LISTEN connection, started by the first wait). */
  deviceWaits: DeviceWaits;
  /** The report builder's field options, reused for a few seconds. */
  reportOptions: ReportOptionsCache;
  /** E2E journeys' health, recomputed when their window of runs changes. */
  journeyHealth: JourneyHealthCache;
  /** How alert webhooks resolve host names and which certificates they trust. */
  webhook: WebhookTransport;
}

export interface ServiceOptions {
  clock?: Clock;
  webhook?: WebhookTransport;
}

export function createServices(
  config: Config,
  database: Database,
  logger: Logger,
  options: ServiceOptions = {},
): Services {
  const clock = options.clock ?? systemClock;
  const settings = new SettingsService(database.sql, config, clock);
  const fleetCounts = new FleetCounter(database.sql, clock);
  return {
    config,
    database,
    logger,
    clock,
    settings,
    fleetCounts,
    liveHub: new LiveHub({
      database,
      logger,
      clock,
      fleetCounts,
      onlineWindowSeconds: async () => (await settings.device()).onlineWindowSeconds,
    }),
    deviceWaits: new DeviceWaits(database, logger, clock),
    reportOptions: new ReportOptionsCache(database.sql, clock),
    journeyHealth: new JourneyHealthCache(database, clock),
    webhook: options.webhook ?? systemWebhookTransport,
  };
}

/** Ends what holds connections open (live streams, agents' waits): before HTTP drains at shutdown. */
export async function closeServices(services: Services): Promise<void> {
  await services.liveHub.close();
  await services.deviceWaits.close();
}
