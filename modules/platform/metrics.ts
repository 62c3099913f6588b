/**
 * Prometheus metrics of this process (prom-client): what happens here is counted where it happens
 * (requests, heartbeats, commands, jobs), cheaply — an increment, never a query — and the state of
 * the fleet is read at scrape time (modules/metrics). One registry per process: each Outpost process
 * is its own scrape target.
 */
import client from "prom-client";

export const metricsRegistry = new client.Registry();
metricsRegistry.setDefaultLabels({ service: "outpost" });

const registers = [metricsRegistry];

export const httpRequestDuration = new client.Histogram({
  name: "outpost_http_request_duration_seconds",
  help: "HTTP requests by method, route template and status, with their server time",
  labelNames: ["method", "route", "status"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers,
});

/**
 * The heartbeat's answers: accepted, or refused with the status the device API gives a heartbeat
 * (docs/device-api.md): bad body, wrong key, not approved, unknown device, too large, rate limited.
 */
export const HEARTBEAT_RESULTS = [
  "accepted",
  "refused_400",
  "refused_401",
  "refused_403",
  "refused_404",
  "refused_413",
  "refused_429",
] as const;

export const heartbeatsTotal = new client.Counter({
  name: "outpost_heartbeats_total",
  help: "Heartbeats by result: accepted, or refused_<HTTP status> (401, 403, 429, ...)",
  labelNames: ["result"] as const,
  registers,
});

export const COMMAND_EVENTS = [
  "queued",
  "delivered",
  "succeeded",
  "failed",
  "expired",
  "unmatched_result",
] as const;

export const commandsTotal = new client.Counter({
  name: "outpost_commands_total",
  help: "Device commands by event: queued, delivered, succeeded, failed, expired, unmatched_result (a result for no command)",
  labelNames: ["event"] as const,
  registers,
});

// Every known label value is exported from the start, at 0: `rate()` and `increase()` need a series
// before its first event, and an alert on `outpost_commands_total{event="failed"}` must not read
// "no data" on a healthy fleet. (A status outside the list still counts: it appears when it happens.)
for (const result of HEARTBEAT_RESULTS) heartbeatsTotal.inc({ result }, 0);
for (const event of COMMAND_EVENTS) commandsTotal.inc({ event }, 0);

export const jobDuration = new client.Histogram({
  name: "outpost_job_duration_seconds",
  help: "Durable job executions by task and outcome",
  labelNames: ["task", "status"] as const,
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300],
  registers,
});

/** A worker's tasks from the start, `succeeded` and `failed` at 0 (as the counters above). */
export function zeroJobDurations(tasks: readonly string[]): void {
  for (const task of tasks) for (const status of ["succeeded", "failed"]) jobDuration.zero({ task, status });
}

const memory = new client.Gauge({
  name: "outpost_process_memory_bytes",
  help: "Process memory by kind (rss, heap_used, heap_total, external)",
  labelNames: ["kind"] as const,
  registers,
  collect() {
    const usage = process.memoryUsage();
    this.set({ kind: "rss" }, usage.rss);
    this.set({ kind: "heap_used" }, usage.heapUsed);
    this.set({ kind: "heap_total" }, usage.heapTotal);
    this.set({ kind: "external" }, usage.external);
  },
});
void memory;

new client.Gauge({
  name: "outpost_process_uptime_seconds",
  help: "Seconds since this process started",
  registers,
  collect() {
    this.set(process.uptime());
  },
});

/**
 * Every wake-up of an idle process costs here (~0.08 ms on a small VM): sampling every 25 ms costs
 * about 0.6 % of a core while idle (10 ms: 1 %) and still resolves the histogram's 25 ms bucket.
 */
const EVENT_LOOP_SAMPLE_MS = 25;

const eventLoopDelay = new client.Histogram({
  name: "outpost_event_loop_delay_seconds",
  help: `How late a timer due every ${EVENT_LOOP_SAMPLE_MS} ms ran: how long work waited behind other work on this process's event loop`,
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers,
});

let eventLoopTimer: ReturnType<typeof setInterval> | undefined;
let eventLoopUsers = 0;

/**
 * Samples the event loop's delay into `outpost_event_loop_delay_seconds` until the returned stop() is
 * called. A timer of our own, because node:perf_hooks' monitorEventLoopDelay does not see a blocked
 * loop in Bun (1.4: a 120 ms block read as 0.3 ms). Started only in a process that serves metrics; one
 * timer per process however many callers (the histogram is the process's), ended by the last stop().
 */
export function monitorEventLoop(): () => void {
  eventLoopUsers++;
  if (!eventLoopTimer) {
    let due = performance.now() + EVENT_LOOP_SAMPLE_MS;
    eventLoopTimer = setInterval(() => {
      const now = performance.now();
      eventLoopDelay.observe(Math.max(0, now - due) / 1000);
      due = now + EVENT_LOOP_SAMPLE_MS;
    }, EVENT_LOOP_SAMPLE_MS);
    eventLoopTimer.unref();
  }
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    if (--eventLoopUsers === 0) {
      clearInterval(eventLoopTimer);
      eventLoopTimer = undefined;
    }
  };
}

/** Set by modules/devices/wake.ts: the agents' waits this process holds open. */
export const deviceWaitsHeld = new client.Gauge({
  name: "outpost_device_waits_held",
  help: "Agents' waits for work this process holds open (one connection each)",
  registers,
});

/** The scrape: this process's metrics plus `stateAtScrape` (gauges a feature read from PostgreSQL now). */
export async function renderMetrics(stateAtScrape: client.Registry): Promise<string> {
  return client.Registry.merge([metricsRegistry, stateAtScrape]).metrics();
}

export const METRICS_CONTENT_TYPE = metricsRegistry.contentType;
export { client as promClient };
