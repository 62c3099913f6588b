import pino from "pino";

export type Logger = pino.Logger;

/** Structured logs (ISO 8601 UTC times, like the server's) go to stderr so stdout stays reserved for command output. */
export function createLogger(level: string): Logger {
  return pino(
    { level, base: { component: "outpost-agent" }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ fd: 2, sync: true }),
  );
}

/** A logger that drops everything (tests, `script test`). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
