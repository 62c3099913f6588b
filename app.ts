import path from "node:path";
import { html } from "@elysiajs/html";
import { type AnyElysia, Elysia } from "elysia";
import { JOB_CATALOG } from "./jobs";
import { alertEvaluationWake } from "./modules/alerts";
import { alertJsonApiRoutes } from "./modules/alerts/jsonapi";
import { alertRoutes } from "./modules/alerts/routes";
import { rulesUsingView } from "./modules/alerts/rules";
import { alertSettingsRoutes } from "./modules/alerts/settings-routes";
import { auditRecorder } from "./modules/audit/recorder";
import { auditRoutes } from "./modules/audit/routes";
import { builderRoutes } from "./modules/builder/routes";
import { commandCsvRoutes } from "./modules/commands/csv-routes";
import { commandJsonApiRoutes } from "./modules/commands/jsonapi";
import { commandRoutes } from "./modules/commands/routes";
import { consoleRoutes } from "./modules/console/routes";
import { deviceCsvRoutes } from "./modules/devices/csv-routes";
import { deviceJsonApiRoutes } from "./modules/devices/jsonapi";
import { devicePageRoutes } from "./modules/devices/pages/routes";
import { deviceRoutes } from "./modules/devices/routes";
import { E2E_DEFAULTS, e2eConfigFor } from "./modules/e2e/config";
import { e2eJsonApiRoutes } from "./modules/e2e/jsonapi";
import { e2eRoutes } from "./modules/e2e/routes";
import { installRoutes } from "./modules/enrolment/install-routes";
import { fleetConsoleRoutes } from "./modules/fleet/console-routes";
import { fleetApiRoutes } from "./modules/fleet/routes";
import { deviceMatch, syncDeclaredLabels, tagsOfDevices } from "./modules/fleet/service";
import { heartbeatRoutes } from "./modules/heartbeat/routes";
import { jobRunCsvRoutes } from "./modules/jobs/csv-routes";
import { jobRoutes } from "./modules/jobs/routes";
import { migrateJobQueue, startJobRunner } from "./modules/jobs/runner";
import { jsonApiErrorMapper } from "./modules/jsonapi";
import { liveRoutes } from "./modules/live/routes";
import { metricsRoutes, startMetricsServer } from "./modules/metrics/routes";
import { oidcRoutes } from "./modules/oidc/routes";
import { openApiRoutes } from "./modules/openapi/routes";
import { accountRoutes } from "./modules/operators/account-routes";
import { resolvePrincipal } from "./modules/operators/principal";
import { operatorRoutes } from "./modules/operators/routes";
import * as operators from "./modules/operators/service";
import { signInRoutes } from "./modules/operators/sign-in-routes";
import { accessPlugin } from "./modules/platform/access";
import { type Config, runsTunnel, runsWeb, runsWorker, servesMetrics } from "./modules/platform/config";
import type { AppContext } from "./modules/platform/context";
import { applyMigrations, connectDatabase } from "./modules/platform/database";
import { startEmbeddedPostgres } from "./modules/platform/embedded-postgres";
import { healthRoutes } from "./modules/platform/health";
import { httpPlugin } from "./modules/platform/http";
import { type Logger, logsPretty } from "./modules/platform/logger";
import { monitorEventLoop } from "./modules/platform/metrics";
import { ssoFormTargets } from "./modules/platform/sso-config";
import { remoteAccessConsoleRoutes } from "./modules/remote-access/console-routes";
import { forwardRoutes } from "./modules/remote-access/forward-routes";
import { remoteAccessRoutes } from "./modules/remote-access/routes";
import { endDeviceLeases, type MuxAddress } from "./modules/remote-access/service";
import { type RunningTunnel, startTunnel } from "./modules/remote-access/tunnel";
import { reportApiRoutes } from "./modules/reports/api";
import { reportsUsingView } from "./modules/reports/definitions";
import { reportPageRoutes } from "./modules/reports/routes";
import { rolloutConsoleRoutes } from "./modules/rollouts/console-routes";
import { rolloutApiRoutes } from "./modules/rollouts/routes";
import { accessSettingsRoutes } from "./modules/settings/access-routes";
import { enrolmentSettingsRoutes } from "./modules/settings/enrolment-routes";
import { settingsRoutes } from "./modules/settings/routes";
import { telemetryJsonApiRoutes } from "./modules/telemetry/jsonapi";
import { terminalApiRoutes } from "./modules/terminal/api-routes";
import { terminalRoutes } from "./modules/terminal/routes";
import { terminalSocketRoutes } from "./modules/terminal/socket";
import { closeServices, createServices, type ServiceOptions, type Services } from "./services";
import { renderErrorPage } from "./ui/layout";
import { uiRoutes } from "./ui/routes";

/** Largest request body accepted anywhere; routes with smaller needs check their own limits. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface AppDependencies extends Services {
  workerRunning(): boolean;
  /** Where the tunnel role's multiplexer listens (this process's own when it runs the tunnel). */
  tunnelMux?: MuxAddress;
}

/** The multiplexer of a tunnel role in another process: TUNNEL_MUX_HOST/PORT (a wildcard bind means loopback). */
function configuredMux(config: Config): MuxAddress {
  const host =
    config.tunnelMuxHost === "0.0.0.0" || config.tunnelMuxHost === "::" ? "127.0.0.1" : config.tunnelMuxHost;
  return { host, port: config.tunnelMuxPort };
}

/** The composition root: one Elysia app made of every module's routes. */
export function buildApp(deps: AppDependencies): AnyElysia {
  const { config, database } = deps;
  const https = config.baseUrl.startsWith("https:");
  const access = accessPlugin({
    secretKey: config.secretKey,
    resolvePrincipal: (request) => resolvePrincipal(database.db, config.sessionTtlHours, request, https),
  });
  const { tunnelMux, ...services } = deps;
  const ctx: AppContext = {
    ...services,
    access,
    heartbeatAccepted: alertEvaluationWake(database.sql, services.clock),
    labelsDeclared: (deviceId, labels) => syncDeclaredLabels(database.sql, deviceId, labels),
    deviceTags: (ids) => tagsOfDevices(database.sql, ids),
    viewUsers: async (viewId) => [
      ...(await rulesUsingView(database.sql, viewId)).map((r) => ({
        kind: "alert rule",
        id: String(r.id),
        name: r.name,
      })),
      ...(await reportsUsingView(database.sql, viewId)).map((r) => ({ kind: "report", ...r })),
    ],
    deviceQuery: async (input, onlineWindowSeconds) => {
      const match = await deviceMatch(database, input, { onlineWindowSeconds });
      return { condition: match.condition, viewName: match.view?.name };
    },
  };
  const terminalLimits = { idleSeconds: config.terminalIdleSeconds, maxSeconds: config.terminalMaxSeconds };
  const mux = { sql: database.sql, fallback: tunnelMux ?? configuredMux(config) };
  const app = new Elysia({
    serve: { maxRequestBodySize: MAX_BODY_BYTES },
    // Route schemas check requests as they are: an unknown property is refused where a schema says
    // so (E2E), never silently dropped, and what a schema leaves open (telemetry) is kept.
    normalize: false,
  })
    .use(html({ autoDetect: false }))
    // Before httpPlugin: the recorder's transform hook counts an audited request's write as it arrives,
    // also when httpPlugin's then refuses it (unstorable text), so a clean stop waits for that write too.
    .use(auditRecorder(ctx))
    .use(
      httpPlugin({
        logger: deps.logger,
        renderErrorPage,
        mappers: [jsonApiErrorMapper],
        https,
        formTargets: [`*.${config.baseDomain}:*`, ...ssoFormTargets(config.sso)],
        requestMetrics: servesMetrics(config),
      }),
    )
    .use(healthRoutes(ctx))
    .use(metricsRoutes(ctx))
    .use(auditRoutes(ctx))
    .use(operatorRoutes(ctx))
    .use(oidcRoutes(ctx))
    .use(signInRoutes(ctx))
    .use(accountRoutes(ctx))
    .use(jobRoutes(ctx, JOB_CATALOG))
    .use(deviceRoutes(ctx))
    .use(fleetApiRoutes(ctx))
    .use(rolloutApiRoutes(ctx))
    .use(heartbeatRoutes(ctx))
    .use(commandRoutes(ctx))
    .use(remoteAccessRoutes(ctx))
    .use(forwardRoutes(ctx, () => mux))
    .use(remoteAccessConsoleRoutes(ctx))
    .use(terminalRoutes(ctx, terminalLimits))
    .use(terminalApiRoutes(ctx, terminalLimits))
    .use(terminalSocketRoutes(ctx, terminalLimits, () => mux))
    .use(builderRoutes(ctx))
    // A revocation (approved → rejected) also closes the device's remote access.
    .use(
      deviceJsonApiRoutes(ctx, { onRejected: (sql, deviceId) => endDeviceLeases(sql, deviceId, "revoked") }),
    )
    .use(commandJsonApiRoutes(ctx))
    .use(telemetryJsonApiRoutes(ctx))
    .use(alertJsonApiRoutes(ctx))
    .use(e2eJsonApiRoutes(ctx))
    .use(e2eRoutes(ctx))
    .use(devicePageRoutes(ctx))
    .use(fleetConsoleRoutes(ctx))
    .use(rolloutConsoleRoutes(ctx))
    .use(consoleRoutes(ctx))
    .use(settingsRoutes(ctx))
    .use(accessSettingsRoutes(ctx))
    .use(enrolmentSettingsRoutes(ctx))
    .use(installRoutes(ctx))
    .use(liveRoutes(ctx))
    .use(alertRoutes(ctx))
    .use(alertSettingsRoutes(ctx))
    .use(reportApiRoutes(ctx))
    .use(reportPageRoutes(ctx))
    .use(deviceCsvRoutes(ctx))
    .use(commandCsvRoutes(ctx))
    .use(jobRunCsvRoutes(ctx))
    .use(uiRoutes(ctx));
  // Last: the OpenAPI document describes every route registered above.
  const e2eProtocolVersions = config.e2eEnabled
    ? (e2eConfigFor(config)?.protocolVersions ?? E2E_DEFAULTS.protocolVersions)
    : E2E_DEFAULTS.protocolVersions;
  return app.use(openApiRoutes(ctx, () => app, { e2eProtocolVersions }));
}

export type OutpostApp = ReturnType<typeof buildApp>;

export interface RunningOutpost {
  /** Where HTTP listens (web roles only). */
  url: string | undefined;
  port: number | undefined;
  databaseUrl: string;
  setupCode: string | undefined;
  /** The tunnel role's listeners (tunnel and all roles only). */
  tunnel: RunningTunnel | undefined;
  /** The separate metrics listener's port (METRICS_PORT), if any. */
  metricsPort: number | undefined;
  /** This process's services (tests read and drive them). */
  services: Services;
  stop(): Promise<void>;
}

export interface StartOptions extends ServiceOptions {
  /** Called with the one-time setup code while no operator exists (default: printed to stderr). */
  announceSetupCode?(code: string, setupUrl: string): void;
}

const HTTP_DRAIN_MS = 10_000;
/** How long a stop waits for the audit writes of requests already answered (modules/audit/writes.ts). */
const AUDIT_SETTLE_MS = 5_000;

/**
 * Starts the roles of this process in order — database (embedded unless DATABASE_URL), migrations,
 * bootstrap, worker, HTTP — and returns a stop() that undoes them in reverse: stop accepting HTTP,
 * wait for the audit writes under way (bounded), drain jobs, close pools, stop embedded PostgreSQL last.
 */
export async function startOutpost(
  config: Config,
  logger: Logger,
  options: StartOptions = {},
): Promise<RunningOutpost> {
  e2eConfigFor(config); // E2E_CONFIG is validated before anything starts (ConfigError: one line)
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        directory: path.join(config.dataDir, "postgres"),
        log: (message) => logger.info(message),
      });
  const databaseUrl = config.databaseUrl ?? embedded!.url;
  const database = connectDatabase(databaseUrl);
  const services = createServices(config, database, logger, options);
  let runner: Awaited<ReturnType<typeof startJobRunner>> | undefined;
  let server: ReturnType<typeof buildApp> | undefined;
  let tunnel: RunningTunnel | undefined;
  let metricsServer: ReturnType<typeof startMetricsServer> | undefined;
  const stopEventLoopMonitor = servesMetrics(config) ? monitorEventLoop() : undefined;
  let stopped = false;

  async function stop() {
    if (stopped) return;
    stopped = true;
    await closeServices(services); // ends live-update streams and agents' held waits so HTTP can drain
    if (server?.server) {
      // (Only once listening: a failed listen, e.g. PORT in use, must still drain and stop the rest.)
      // Stop accepting; give in-flight requests HTTP_DRAIN_MS, then close what is left.
      const force = setTimeout(() => server?.server?.stop(true), HTTP_DRAIN_MS);
      await server.stop();
      clearTimeout(force);
      logger.info("HTTP stopped");
    }
    // Answered requests are recorded after their answer: let those writes land before the pool closes.
    if (!(await services.auditWrites.settled(AUDIT_SETTLE_MS)))
      logger.warn({ waitedMs: AUDIT_SETTLE_MS }, "stopping with audit writes still under way");
    await tunnel?.stop();
    metricsServer?.stop(true);
    stopEventLoopMonitor?.();
    if (runner) {
      await runner.stop();
      logger.info("job runner drained and stopped");
    }
    await database.close();
    if (embedded?.owned) {
      await embedded.stop();
      logger.info("embedded PostgreSQL stopped");
    }
  }

  try {
    await applyMigrations(database);
    await migrateJobQueue(databaseUrl, logger);
    if (config.bootstrapAdminEmail && config.bootstrapAdminPassword) {
      if (
        await operators.ensureBootstrapAdmin(
          database.db,
          config.bootstrapAdminEmail,
          config.bootstrapAdminPassword,
        )
      ) {
        logger.info({ email: config.bootstrapAdminEmail }, "bootstrap administrator created");
      }
    }
    if (config.bootstrapApiToken) await operators.ensureBootstrapToken(database.db, config.bootstrapApiToken);
    if (runsWorker(config)) runner = await startJobRunner(services, JOB_CATALOG);
    if (runsTunnel(config)) tunnel = await startTunnel(config, database, logger, services.clock);
    if (config.metricsPort !== undefined) metricsServer = startMetricsServer(services, logger);
    let setupCode: string | undefined;
    if (runsWeb(config)) {
      // Issued before listening, so the code is on the console by the time /readyz answers.
      setupCode = await operators.issueSetupCode(database.db);
      server = buildApp({
        ...services,
        workerRunning: () => runner !== undefined && !stopped,
        tunnelMux: tunnel ? { host: "127.0.0.1", port: tunnel.muxPort } : undefined,
      });
      server.listen({ port: config.port, hostname: config.host });
      logger.info(
        // (`role` is already on every line: the logger's bindings.)
        { url: config.baseUrl, port: server.server?.port },
        "Outpost is listening",
      );
      if (setupCode) {
        const announce = options.announceSetupCode ?? setupCodeAnnouncer(config, logger);
        announce(setupCode, `${config.baseUrl}/setup`);
      }
    }
    const port = server?.server?.port;
    return {
      url: port === undefined ? undefined : `http://127.0.0.1:${port}`,
      port,
      databaseUrl,
      setupCode,
      tunnel,
      metricsPort: metricsServer?.port,
      services,
      stop,
    };
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
}

/**
 * The first start's setup code: a banner on stderr for a person at a terminal (pretty logs), else one
 * log line like every other (JSON logs: journald and log shippers read one object a line).
 */
function setupCodeAnnouncer(config: Config, logger: Logger) {
  return (code: string, setupUrl: string) => {
    if (!logsPretty(config.logFormat)) {
      logger.warn(
        { setup_url: setupUrl, setup_code: code },
        `First run: no operator exists yet. Open ${setupUrl} and enter this one-time setup code: ${code}`,
      );
      return;
    }
    process.stderr.write(
      `\n  First run: no operator exists yet.\n  Open ${setupUrl} and enter this one-time setup code:\n\n      ${code}\n\n`,
    );
  };
}
