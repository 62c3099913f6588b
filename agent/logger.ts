import pino from "pino";

export type Logger = pino.Logger;

/** Structured logs go to stderr so stdout stays reserved for command output (YAML, tables). */
export function createLogger(level: string): Logger {
  return pino({ level, base: { component: "outpost-agent" } }, pino.destination({ fd: 2, sync: true }));
}

/** A logger that drops everything (tests, `script test`). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
