import pino from "pino";
import pinoPretty from "pino-pretty";

export type Logger = pino.Logger;

export const LOG_FORMATS = ["auto", "json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Secrets a URL may carry in its query: the device API's `api_key` (the spec's transport), tickets, tokens. */
const SECRET_QUERY = /([?&](?:api_key|token|access_token|ticket|password|secret|key)=)[^&#\s"']*/gi;

/** The one redaction rule for text in log lines: secret query parameters become `[redacted]`. */
export function redactSecrets(text: string): string {
  return text.replace(SECRET_QUERY, "$1[redacted]");
}

function scrub(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return redactSecrets(value);
  if (depth > 3 || typeof value !== "object" || value === null || value instanceof Error) return value;
  if (Array.isArray(value)) return value.map((item) => scrub(item, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scrub(item, depth + 1)]));
}

/** Whether `format` means readable lines here (`auto`: when stdout is a terminal); else JSON lines. */
export function logsPretty(format: LogFormat): boolean {
  return format === "pretty" || (format === "auto" && process.stdout.isTTY === true);
}

/**
 * Logs on stdout with secrets redacted wherever they might appear: JSON lines for machines, or
 * readable coloured lines for a person (`pretty`, or `auto` when stdout is a terminal). Times are
 * ISO 8601 UTC either way, like the agent's.
 */
export function createLogger(
  level: string,
  bindings: Record<string, unknown> = {},
  format: LogFormat = "json",
  destination?: pino.DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: "outpost", ...bindings },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { log: (object) => scrub(object) as Record<string, unknown> },
    hooks: {
      logMethod(args, method) {
        const scrubbed = args.map((arg) => (typeof arg === "string" ? redactSecrets(arg) : arg));
        method.apply(this, scrubbed as Parameters<typeof method>);
      },
    },
    serializers: {
      err: (error: unknown) => {
        const serialized = pino.stdSerializers.err(error as Error);
        return serialized ? (scrub({ ...serialized }) as typeof serialized) : serialized;
      },
    },
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
        "proxy-authorization",
        "*.proxy-authorization",
        "*.headers.authorization",
        "*.headers.proxy-authorization",
        "*.headers.cookie",
        "cookie",
        "*.cookie",
        "secret",
        "*.secret",
      ],
      censor: "[redacted]",
    },
  };
  if (destination) return pino(options, destination);
  if (!logsPretty(format)) return pino(options);
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
