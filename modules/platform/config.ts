import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { LOG_FORMATS, type LogFormat } from "./logger";
import { loadSsoConfig, type SsoConfig } from "./sso-config";

export const ROLES = ["all", "web", "worker", "tunnel"] as const;
export type Role = (typeof ROLES)[number];

export interface Config {
  port: number;
  host: string;
  baseUrl: string;
  baseDomain: string;
  dataDir: string;
  databaseUrl: string | undefined;
  secretKey: string;
  role: Role;
  logLevel: string;
  logFormat: LogFormat;
  tunnelSshPort: number;
  tunnelHttpPort: number;
  tunnelMuxPort: number;
  /** The tunnel's data plane (TLS work connections from agents); 0 picks a free port. */
  tunnelDataPort: number;
  /** Address the TCP multiplexer binds (loopback unless told otherwise: it fronts device sshd). */
  tunnelMuxHost: string;
  /** Address the tunnel SSH server and HTTP vhost front bind. */
  tunnelHost: string;
  /**
   * Address other processes reach this tunnel process's HTTP front and multiplexer at (several tunnel
   * processes: docs/remote-access.md); unset: the bind address, loopback when that is a wildcard.
   */
  tunnelAdvertiseHost: string | undefined;
  remoteAccessMaxMinutes: number;
  /** How long a closed device page's lease waits for another page of the device to take it over. */
  remoteAccessPageGraceSeconds: number;
  /** Browser terminal: idle cut, hard limit (seconds) and how long recordings are kept (days). */
  terminalIdleSeconds: number;
  terminalMaxSeconds: number;
  terminalRecordingRetentionDays: number;
  /** Where `/downloads` finds the agent builds (`npm run build:agent` writes them to dist/). */
  agentDistDir: string;
  e2eEnabled: boolean;
  e2eConfig: string | undefined;
  /** Bearer token for `GET /metrics` on the main port; unset (and no METRICS_PORT) = no metrics. */
  metricsToken: string | undefined;
  /** A separate listener for `/metrics` (no token: bind it where only Prometheus reaches). */
  metricsHost: string;
  metricsPort: number | undefined;
  workerConcurrency: number;
  sessionTtlHours: number;
  bootstrapAdminEmail: string | undefined;
  bootstrapAdminPassword: string | undefined;
  bootstrapApiToken: string | undefined;
  /** Single sign-on (OpenID Connect) and who may still sign in with a password (docs/security.md). */
  sso: SsoConfig;
  /** Defaults of the device settings (modules/settings/service.ts reads them; docs/device-api.md). */
  deviceOnlineWindowSeconds: number;
  deviceHeartbeatRateLimit: number;
  /** Longest an agent's wait for work is held (s); 0 answers at once, so agents just sleep. */
  deviceWaitMaxSeconds: number;
  /** Registrations per client address (TCP peer) per minute. */
  deviceRegisterRateLimit: number;
  /** Most heartbeats written by one statement (HEARTBEAT_BATCH_SIZE, 256). */
  heartbeatBatchSize: number;
  /** Most heartbeat batches one web process runs at once, each on its own connection (2). */
  heartbeatBatchConcurrency: number;
  /** Fewest waiting heartbeats that start a batch beside a running one (HEARTBEAT_BATCH_OVERLAP_AT, 32). */
  heartbeatBatchOverlapAt: number;
  /** Longest fewer than that wait for a running batch, in ms (HEARTBEAT_BATCH_OVERLAP_WAIT_MS, 20). */
  heartbeatBatchOverlapWaitMs: number;
  /**
   * Longest a heartbeat waits for company when no batch runs and heartbeats come steadily, in ms
   * (HEARTBEAT_BATCH_LINGER_MS, 25; 0: never).
   */
  heartbeatBatchLingerMs: number;
  /** Command result posts plus payload fetches per device per minute. */
  deviceCommandRateLimit: number;
  telemetryRetentionDays: number;
  commandTtlHours: number;
  commandRetentionDays: number;
  /** Alerts (docs/alerts.md). */
  alertRetentionDays: number;
  /** Audit events older than this are deleted daily. */
  auditRetentionDays: number;
  alertNotifyMinIntervalMinutes: number;
  smtpUrl: string | undefined;
  smtpFrom: string;
  /** TEST ONLY (off by default): lets webhooks reach loopback receivers. Never set in production. */
  alertWebhookAllowLoopback: boolean;
}

/** Thrown for invalid configuration; its message is the one line printed at start. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
  }
  return Number(raw);
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (["true", "1", "yes", "on"].includes(raw)) return true;
  if (["false", "0", "no", "off"].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false (got "${raw}")`);
}

function url(env: Env, name: string, fallback: string, protocols: string[]): string {
  const raw = text(env, name) ?? fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL (got "${raw}")`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(
      `${name} must start with ${protocols.map((p) => `${p}//`).join(" or ")} (got "${raw}")`,
    );
  }
  return raw.replace(/\/+$/, "");
}

function role(env: Env): Role {
  const raw = text(env, "OUTPOST_ROLE") ?? "all";
  if (!(ROLES as readonly string[]).includes(raw)) {
    throw new ConfigError(`OUTPOST_ROLE must be one of ${ROLES.join(", ")} (got "${raw}")`);
  }
  return raw as Role;
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function metricsToken(env: Env): string | undefined {
  const token = text(env, "METRICS_TOKEN");
  if (token !== undefined && token.length < 16)
    throw new ConfigError("METRICS_TOKEN must be at least 16 characters long");
  return token;
}

/** The secret used for signing; generated once and kept in DATA_DIR when SECRET_KEY is unset. */
function secretKey(env: Env, dataDir: string): string {
  const given = text(env, "SECRET_KEY");
  if (given !== undefined) {
    if (given.length < 32) throw new ConfigError("SECRET_KEY must be at least 32 characters long");
    return given;
  }
  const file = path.join(dataDir, "secret_key");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dataDir, { recursive: true });
  const generated = randomBytes(32).toString("base64url");
  writeFileSync(file, `${generated}\n`, { mode: 0o600, flag: "wx" });
  return generated;
}

/**
 * Where Outpost keeps its state, read without side effects (loadConfig creates DATA_DIR's secret key):
 * what a restore into an empty DATA_DIR needs.
 */
export function storageConfig(env: Env = process.env): { dataDir: string; databaseUrl: string | undefined } {
  const databaseUrl = text(env, "DATABASE_URL");
  if (databaseUrl !== undefined) url(env, "DATABASE_URL", databaseUrl, ["postgres:", "postgresql:"]);
  return { dataDir: path.resolve(text(env, "DATA_DIR") ?? "./data"), databaseUrl };
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, "PORT", 4000, 0, 65535);
  const { dataDir, databaseUrl } = storageConfig(env);
  const logLevel = text(env, "LOG_LEVEL") ?? "info";
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")} (got "${logLevel}")`);
  }
  const logFormat = (text(env, "LOG_FORMAT") ?? "auto") as LogFormat;
  if (!LOG_FORMATS.includes(logFormat)) {
    throw new ConfigError(`LOG_FORMAT must be one of ${LOG_FORMATS.join(", ")} (got "${logFormat}")`);
  }
  const bootstrapApiToken = text(env, "OUTPOST_BOOTSTRAP_API_TOKEN");
  if (bootstrapApiToken !== undefined && bootstrapApiToken.length < 32) {
    throw new ConfigError("OUTPOST_BOOTSTRAP_API_TOKEN must be at least 32 characters long");
  }
  const bootstrapAdminEmail = text(env, "OUTPOST_BOOTSTRAP_ADMIN_EMAIL");
  const bootstrapAdminPassword = env.OUTPOST_BOOTSTRAP_ADMIN_PASSWORD || undefined;
  if ((bootstrapAdminEmail === undefined) !== (bootstrapAdminPassword === undefined)) {
    throw new ConfigError(
      "OUTPOST_BOOTSTRAP_ADMIN_EMAIL and OUTPOST_BOOTSTRAP_ADMIN_PASSWORD must be set together",
    );
  }
  if (bootstrapAdminPassword !== undefined && bootstrapAdminPassword.length < 10) {
    throw new ConfigError("OUTPOST_BOOTSTRAP_ADMIN_PASSWORD must be at least 10 characters long");
  }
  const e2eEnabled = boolean(env, "E2E_ENABLED", false);
  const e2eConfig = text(env, "E2E_CONFIG");
  if (e2eConfig !== undefined && !existsSync(e2eConfig)) {
    throw new ConfigError(`E2E_CONFIG names a file that does not exist: ${e2eConfig}`);
  }
  return {
    port,
    host: text(env, "HOST") ?? "0.0.0.0",
    baseUrl: url(env, "BASE_URL", `http://localhost:${port}`, ["http:", "https:"]),
    baseDomain: text(env, "BASE_DOMAIN") ?? "localhost",
    dataDir,
    databaseUrl,
    secretKey: secretKey(env, dataDir),
    role: role(env),
    logLevel,
    logFormat,
    tunnelSshPort: integer(env, "TUNNEL_SSH_PORT", 7000, 0, 65535),
    tunnelHttpPort: integer(env, "TUNNEL_HTTP_PORT", 8080, 0, 65535),
    tunnelMuxPort: integer(env, "TUNNEL_MUX_PORT", 2022, 0, 65535),
    tunnelDataPort: integer(env, "TUNNEL_DATA_PORT", 7001, 0, 65535),
    tunnelMuxHost: text(env, "TUNNEL_MUX_HOST") ?? "127.0.0.1",
    tunnelHost: text(env, "TUNNEL_HOST") ?? "0.0.0.0",
    tunnelAdvertiseHost: text(env, "TUNNEL_ADVERTISE_HOST"),
    remoteAccessMaxMinutes: integer(env, "REMOTE_ACCESS_MAX_MINUTES", 60, 1, 60),
    remoteAccessPageGraceSeconds: integer(env, "REMOTE_ACCESS_PAGE_GRACE_SECONDS", 10, 1, 120),
    terminalIdleSeconds: integer(env, "TERMINAL_IDLE_SECONDS", 600, 2, 86_400),
    terminalMaxSeconds: integer(env, "TERMINAL_MAX_SECONDS", 3600, 5, 3600),
    terminalRecordingRetentionDays: integer(env, "TERMINAL_RECORDING_RETENTION_DAYS", 90, 1, 3650),
    agentDistDir: text(env, "AGENT_DIST_DIR") ?? path.resolve(import.meta.dir, "../../dist"),
    e2eEnabled,
    e2eConfig,
    metricsToken: metricsToken(env),
    metricsHost: text(env, "METRICS_HOST") ?? "127.0.0.1",
    metricsPort:
      text(env, "METRICS_PORT") === undefined ? undefined : integer(env, "METRICS_PORT", 9464, 0, 65535),
    workerConcurrency: integer(env, "WORKER_CONCURRENCY", 5, 1, 100),
    sessionTtlHours: integer(env, "SESSION_TTL_HOURS", 12, 1, 24 * 90),
    bootstrapAdminEmail,
    bootstrapAdminPassword,
    bootstrapApiToken,
    sso: loadSsoConfig(env, (message) => new ConfigError(message)),
    deviceOnlineWindowSeconds: integer(env, "DEVICE_ONLINE_WINDOW_SECONDS", 300, 60, 86_400),
    deviceHeartbeatRateLimit: integer(env, "DEVICE_HEARTBEAT_RATE_LIMIT", 30, 1, 1_000_000),
    deviceRegisterRateLimit: integer(env, "DEVICE_REGISTER_RATE_LIMIT", 60, 1, 1_000_000),
    deviceWaitMaxSeconds: integer(env, "DEVICE_WAIT_MAX_SECONDS", 55, 0, 240),
    heartbeatBatchSize: integer(env, "HEARTBEAT_BATCH_SIZE", 256, 1, 4096),
    heartbeatBatchConcurrency: integer(env, "HEARTBEAT_BATCH_CONCURRENCY", 2, 1, 8),
    heartbeatBatchOverlapAt: integer(env, "HEARTBEAT_BATCH_OVERLAP_AT", 32, 1, 4096),
    heartbeatBatchOverlapWaitMs: integer(env, "HEARTBEAT_BATCH_OVERLAP_WAIT_MS", 20, 0, 60_000),
    heartbeatBatchLingerMs: integer(env, "HEARTBEAT_BATCH_LINGER_MS", 25, 0, 1000),
    deviceCommandRateLimit: integer(env, "DEVICE_COMMAND_RATE_LIMIT", 600, 1, 1_000_000),
    telemetryRetentionDays: integer(env, "TELEMETRY_RETENTION_DAYS", 30, 1, 3650),
    commandTtlHours: integer(env, "COMMAND_TTL_HOURS", 24, 1, 24 * 30),
    commandRetentionDays: integer(env, "COMMAND_RETENTION_DAYS", 90, 1, 3650),
    alertRetentionDays: integer(env, "ALERT_RETENTION_DAYS", 180, 1, 3650),
    auditRetentionDays: integer(env, "AUDIT_RETENTION_DAYS", 365, 1, 3650),
    alertNotifyMinIntervalMinutes: integer(env, "ALERT_NOTIFY_MIN_INTERVAL_MINUTES", 15, 0, 10_080),
    smtpUrl: text(env, "SMTP_URL") && url(env, "SMTP_URL", text(env, "SMTP_URL")!, ["smtp:", "smtps:"]),
    smtpFrom: text(env, "SMTP_FROM") ?? "Outpost <alerts@outpost.local>",
    alertWebhookAllowLoopback: boolean(env, "ALERT_WEBHOOK_ALLOW_LOOPBACK_FOR_TESTS", false),
  };
}

/** Whether this process serves metrics (METRICS_TOKEN or METRICS_PORT): HTTP requests are timed only then. */
export function servesMetrics(config: Pick<Config, "metricsToken" | "metricsPort">): boolean {
  return config.metricsToken !== undefined || config.metricsPort !== undefined;
}

export function runsWeb(config: Pick<Config, "role">): boolean {
  return config.role === "all" || config.role === "web";
}

export function runsWorker(config: Pick<Config, "role">): boolean {
  return config.role === "all" || config.role === "worker";
}

export function runsTunnel(config: Pick<Config, "role">): boolean {
  return config.role === "all" || config.role === "tunnel";
}
