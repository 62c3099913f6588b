import pino from "pino";

export type Logger = pino.Logger;

/** Structured JSON logs on stdout; secrets are redacted wherever they might appear. */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
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
  });
}
