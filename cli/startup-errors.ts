import type { Config } from "../modules/platform/config";

type SystemError = Error & { code?: unknown; syscall?: unknown; address?: unknown; port?: unknown };

/** Network errors met while connecting to PostgreSQL (postgres.js, node-postgres and DNS). */
const CONNECT_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
]);

/** SQLSTATEs PostgreSQL answers a connection with: bad credentials, missing database, too many clients. */
const CONNECT_SQLSTATES: Record<string, string> = {
  "28P01": "password authentication failed",
  "28000": "authentication rejected",
  "3D000": "the database does not exist",
  "53300": "too many connections",
  "57P03": "the server is starting up or shutting down",
};

/** host:port of a postgres:// URL, without the credentials. */
function databaseTarget(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.hostname}:${url.port || "5432"}${url.pathname}`;
  } catch {
    return "the configured server";
  }
}

/**
 * The one line `outpost` prints (exit 2, as for a bad setting) when the configured database cannot
 * be reached or HTTP cannot listen; undefined for any other error, which keeps its stack.
 */
export function describeStartupFailure(error: unknown, config: Config): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, syscall } = error as SystemError;
  if (syscall === "listen" && typeof code === "string") {
    const where = `${config.host}:${config.port}`;
    if (code === "EADDRINUSE")
      return `PORT ${config.port} is already in use (${where}); set PORT to a free port`;
    if (code === "EACCES")
      return `PORT ${config.port} may not be opened by this user (${where}: EACCES); ports below 1024 need privileges, set PORT`;
    if (code === "EADDRNOTAVAIL")
      return `HOST ${config.host} is not an address of this machine (EADDRNOTAVAIL)`;
    return `cannot listen on ${where} (${code}); check PORT and HOST`;
  }
  const sqlState = error.name === "PostgresError" || "severity" in error ? String(code) : undefined;
  const reason =
    typeof code === "string" && CONNECT_CODES.has(code)
      ? error.message
      : sqlState && CONNECT_SQLSTATES[sqlState]
        ? `${CONNECT_SQLSTATES[sqlState]}: ${error.message}`
        : undefined;
  if (reason === undefined) return undefined;
  if (config.databaseUrl) {
    return `DATABASE_URL: cannot connect to PostgreSQL at ${databaseTarget(config.databaseUrl)} (${reason})`;
  }
  return `cannot connect to the embedded PostgreSQL in DATA_DIR ${config.dataDir} (${reason})`;
}
