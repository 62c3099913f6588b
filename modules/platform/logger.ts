import pino from "pino";
import pinoPretty from "pino-pretty";

export type Logger = pino.Logger;

export const LOG_FORMATS = ["auto", "json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * Logs on stdout with secrets redacted wherever they might appear: JSON lines for machines, or
 * readable coloured lines for a person (`pretty`, or `auto` when stdout is a terminal). Times are
 * ISO 8601 UTC either way, like the agent's.
 */
export function createLogger(
  level: string,
  bindings: Record<string, unknown> = {},
  format: LogFormat = "json",
): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: "outpost", ...bindings },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        "password",
        "*.password",
        "token",
        "*.token",
        "api_key",
        "*.api_key",
        "authorization",
        "*.authorization",
      ],
      censor: "[redacted]",
    },
  };
  const pretty = format === "pretty" || (format === "auto" && process.stdout.isTTY === true);
  if (!pretty) return pino(options);
  return pino(
    options,
    pinoPretty({
      colorize: process.stdout.isTTY === true,
      translateTime: "UTC:yyyy-mm-dd'T'HH:MM:ss.l'Z'",
      ignore: "pid,hostname,service",
      sync: true,
    }),
  );
}
