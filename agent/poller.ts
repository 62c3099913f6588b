import fs from "node:fs";
import type { Clock } from "../shared/clock.ts";
import { compileOutputSchema } from "../shared/scripts/validation.ts";
import { ApiError, type DeviceApiClient } from "./api-client.ts";
import { backoffDelayMs } from "./backoff.ts";
import { executeCommands, hydrateCommandPayloads } from "./commands/executor.ts";
import type { CommandResult } from "./commands/types.ts";
import { mapLimit } from "./concurrency.ts";
import type { AgentConfig } from "./config.ts";
import { describeIdentity, resolveExecIdentity, spawnIdentity } from "./exec-identity.ts";
import { type DeviceIdentity, detectIdentity } from "./identity.ts";
import type { Logger } from "./logger.ts";
import { idle } from "./long-poll.ts";
import { registerOnce } from "./register.ts";
import { ResultsOutbox } from "./results-outbox.ts";
import { runOptionsFromConfig, runScript, type ScriptReport } from "./scripts/runner.ts";
import { prewarmInstances } from "./scripts/sandbox.ts";
import type { InstalledScript, ScriptStore } from "./scripts/store.ts";
import { type DeviceCredentials, loadCredentials, saveLastPoll } from "./state.ts";
import { buildHeartbeatBody, buildSchemaDefinition, type SchemaDefinition } from "./telemetry.ts";
import type { TunnelController } from "./tunnel.ts";

/** Everything the poller needs; built once by the CLI. */
export interface AgentContext {
  config: AgentConfig;
  configSource: string | null;
  logger: Logger;
  store: ScriptStore;
  api: DeviceApiClient;
  tunnel: TunnelController;
  startedAt: number;
  /** Times the waits between polls (the CLI's is monotonic; a test's moves on without sleeping). */
  clock: Clock;
}

export interface CollectedTelemetry {
  identity: DeviceIdentity;
  scripts: InstalledScript[];
  reports: Map<string, ScriptReport>;
  schema: SchemaDefinition;
  durationMs: number;
}

/** Re-detect identity and run the latest version of every installed script in parallel. */
export async function collectTelemetry(
  ctx: Pick<AgentContext, "config" | "configSource" | "logger" | "store">,
): Promise<CollectedTelemetry> {
  const started = performance.now();
  const identity = detectIdentity(ctx.config.interface);
  const warnings: { path: string; message: string }[] = [];
  const scripts = ctx.store.latest(warnings);
  for (const w of warnings) ctx.logger.warn({ path: w.path }, `skipping invalid script: ${w.message}`);
  const results = await mapLimit(scripts, ctx.config.script_concurrency, (script) =>
    runScript(script, runOptionsFromConfig(ctx.config, script.meta.name, ctx.configSource)),
  );
  const reports = new Map<string, ScriptReport>();
  scripts.forEach((script, i) => {
    reports.set(script.meta.name, results[i].report);
  });
  const durationMs = Math.round(performance.now() - started);
  return {
    identity,
    scripts,
    reports,
    schema: buildSchemaDefinition(ctx.config.product_name, scripts),
    durationMs,
  };
}

export interface PollSummary {
  durationMs: number;
  scripts: number;
  scriptErrors: number;
  commands: number;
  results: CommandResult[];
  /** This poll's results and any kept from earlier polls reached the server. */
  resultsPosted: boolean;
  remoteAccessRequested: boolean;
  /** The server's fast-poll hint, when it gave one. */
  pollIntervalSeconds?: number;
}

/**
 * How a post of results ended. `refused`: the server answered 4xx (not 408/429): the same body can never
 * be taken, so keeping it would only repeat the refusal. `failed`: worth trying again (network, 5xx, 408, 429).
 */
export type ResultsDelivery = "posted" | "refused" | "failed";

function retryable(err: unknown): boolean {
  return !(err instanceof ApiError) || err.status >= 500 || err.status === 408 || err.status === 429;
}

/**
 * Post all command results in one request. A server older than per-entry outcomes refuses a batch with
 * entries it cannot correlate (422, missing or repeated ids): then the correlatable ones are posted once more.
 */
export async function postResults(
  api: DeviceApiClient,
  creds: DeviceCredentials,
  results: CommandResult[],
  logger: Logger,
): Promise<ResultsDelivery> {
  if (results.length === 0) return "posted";
  try {
    await api.postCommandResults(creds.uuid, creds.token, results);
    return "posted";
  } catch (err) {
    const seen = new Set<string>();
    const correlatable = results.filter(
      (r) => r.command_id !== "" && !seen.has(r.command_id) && seen.add(r.command_id),
    );
    if (
      err instanceof ApiError &&
      err.status === 422 &&
      correlatable.length > 0 &&
      correlatable.length < results.length
    ) {
      logger.warn(
        { err: err.message },
        "server rejected results with missing/duplicate ids; re-posting the others",
      );
      return postResults(api, creds, correlatable, logger);
    }
    const delivery = retryable(err) ? "failed" : "refused";
    logger.error(
      { err: (err as Error).message, results: results.length },
      delivery === "failed"
        ? "posting command results failed; kept for the next poll"
        : "the server refused the command results; they are dropped",
    );
    return delivery;
  }
}

/**
 * Results of this poll plus those an earlier poll (or an earlier run of the agent) could not post: all are
 * in the outbox before the post, and leave it once the server has taken or refused them.
 */
async function deliverResults(ctx: AgentContext, creds: DeviceCredentials, fresh: CommandResult[]) {
  const outbox = new ResultsOutbox(ctx.config.state_dir, ctx.logger);
  const all = outbox.add(fresh);
  if (all.length === 0) return true;
  const delivery = await postResults(ctx.api, creds, all, ctx.logger);
  if (delivery !== "failed") outbox.clear();
  return delivery === "posted";
}

/** Say at start-up, not only at the first exec_cmd, when executed commands cannot run as configured. */
function checkExecIdentity(ctx: Pick<AgentContext, "config" | "logger">): void {
  if (ctx.config.exec_allowlist.length === 0) return;
  try {
    const identity = resolveExecIdentity(ctx.config.exec_user, ctx.config.exec_group);
    spawnIdentity(identity);
    ctx.logger.info(
      `exec_cmd runs commands as ${identity ? describeIdentity(identity) : "the agent's own user and group"}`,
    );
  } catch (err) {
    ctx.logger.warn(`exec_cmd will fail: ${(err as Error).message}`);
  }
}

/**
 * Daemon start-up work that would otherwise slow down the first poll: compile the QuickJS WebAssembly
 * module, fill the instance pool for the installed scripts, compile their output schemas, and run the `cpu` script once so that its
 * first reported figure is a delta since start-up instead of a 100 ms sample taken inside the poll.
 * Returns the time it took (ms).
 */
export async function warmUp(
  ctx: Pick<AgentContext, "config" | "configSource" | "logger" | "store">,
): Promise<number> {
  const started = performance.now();
  checkExecIdentity(ctx);
  try {
    const scripts = ctx.store.latest();
    await prewarmInstances(
      ctx.config.script_memory_mb,
      Math.min(ctx.config.script_concurrency, Math.max(1, scripts.length)),
    );
    for (const script of scripts) {
      try {
        compileOutputSchema(script.meta.schema); // cached; the first poll then only validates
      } catch {
        // reported when the script runs
      }
    }
    const cpu = scripts.find((s) => s.meta.name === "cpu");
    if (cpu) await runScript(cpu, runOptionsFromConfig(ctx.config, cpu.meta.name, ctx.configSource));
  } catch (err) {
    ctx.logger.warn(`warm-up failed (the first poll will be slower): ${(err as Error).message}`);
  }
  return Math.round(performance.now() - started);
}

let hostKeyCache: { path: string; mtimeMs: number; line: string | undefined } | undefined;

/**
 * The first line of the sshd public host key file (re-read only when it changes), so the server can pin
 * the key its browser terminal will see. Unreadable or not a key: nothing is reported.
 */
export function readHostKey(file: string | null): string | undefined {
  if (!file) return undefined;
  try {
    const { mtimeMs } = fs.statSync(file);
    if (hostKeyCache?.path === file && hostKeyCache.mtimeMs === mtimeMs) return hostKeyCache.line;
    const first = fs.readFileSync(file, "utf8").split("\n")[0]?.trim() ?? "";
    const [type, blob] = first.split(/\s+/);
    const line = type?.startsWith("ssh-") || type?.startsWith("ecdsa-") ? `${type} ${blob}` : undefined;
    hostKeyCache = { path: file, mtimeMs, line: blob && first.length <= 2048 ? line : undefined };
    return hostKeyCache.line;
  } catch {
    return undefined;
  }
}

/**
 * One poll: collect telemetry, heartbeat, fetch deferred payloads, execute commands, post results, drive
 * the tunnel. `signal` aborts the heartbeat and payload requests in flight (the agent is stopping); once
 * commands were delivered they are executed and their results posted regardless.
 */
export async function pollOnce(
  ctx: AgentContext,
  creds: DeviceCredentials,
  signal?: AbortSignal,
): Promise<PollSummary> {
  const started = performance.now();
  const telemetry = await collectTelemetry(ctx);
  const body = buildHeartbeatBody({
    uuid: creds.uuid,
    identity: telemetry.identity,
    reports: telemetry.reports,
    schema: telemetry.schema,
    connection: ctx.tunnel.status(),
    collectedAt: new Date(),
    collectDurationMs: telemetry.durationMs,
    agentStartedAt: ctx.startedAt,
    sshHostKey: readHostKey(ctx.config.ssh_host_key_path),
  });
  const reply = await ctx.api.heartbeat(creds.uuid, creds.token, body, signal);
  const { commands, failures } = await hydrateCommandPayloads(
    reply.commands,
    ctx.api,
    creds.uuid,
    creds.token,
    ctx.config.command_timeout_ms,
    signal,
  );
  const results = await executeCommands(
    commands,
    { config: ctx.config, configSource: ctx.configSource, store: ctx.store, logger: ctx.logger },
    failures,
  );
  const resultsPosted = await deliverResults(ctx, creds, results);
  await ctx.tunnel.apply(reply.remote_access_token, reply.tunnel_host_key);
  const scriptErrors = [...telemetry.reports.values()].filter((r) => r.status !== "success").length;
  const durationMs = Math.round(performance.now() - started);
  ctx.logger.info(
    {
      duration_ms: durationMs,
      scripts: telemetry.reports.size,
      script_errors: scriptErrors,
      commands: commands.length,
    },
    "poll complete",
  );
  return {
    durationMs,
    scripts: telemetry.reports.size,
    scriptErrors,
    commands: commands.length,
    results,
    resultsPosted,
    remoteAccessRequested: reply.remote_access_token !== undefined,
    pollIntervalSeconds: reply.poll_interval_seconds,
  };
}

export interface PollLoopOptions {
  signal: AbortSignal;
  /** Stop after this many polls (0 = until the signal aborts). */
  maxPolls?: number;
  random?: () => number;
}

/**
 * The daemon: poll immediately, then every `poll_interval_s` — polls start one interval apart (the wait
 * is the interval minus the poll's own duration, at least 0). A failed poll backs off exponentially
 * (base = the interval, cap = `poll_max_backoff_s`, ±25 % jitter, at least Retry-After); success resets.
 * A 401/403/404 triggers one registration attempt (the server issues a fresh token to an approved device).
 * The signal stops the loop at once: a wait ends, and a heartbeat in flight is aborted.
 * Returns the number of consecutive failures at exit.
 */
export async function runPollLoop(
  ctx: AgentContext,
  creds: DeviceCredentials,
  options: PollLoopOptions,
): Promise<number> {
  const intervalMs = ctx.config.poll_interval_s * 1000;
  const capMs = Math.max(intervalMs, ctx.config.poll_max_backoff_s * 1000);
  let failures = 0;
  let polls = 0;
  let current = creds;
  let lastPoll: PollSummary | undefined;
  /** Polls in a row started by a wait that answered at once: a third is not taken (see idle). */
  let immediateWakes = 0;
  while (!options.signal.aborted) {
    const started = Date.now();
    const startedMono = ctx.clock.now();
    let delay = intervalMs;
    try {
      // Pick up credentials rotated by a concurrent `register` without restarting the daemon.
      try {
        current = loadCredentials(ctx.config.state_dir) ?? current;
      } catch {
        // keep the credentials we have
      }
      const summary = await pollOnce(ctx, current, options.signal);
      lastPoll = summary;
      failures = 0;
      // The server's fast-poll hint (remote access starting) wins while it is present.
      const wanted = summary.pollIntervalSeconds ? summary.pollIntervalSeconds * 1000 : intervalMs;
      delay = Math.max(0, Math.round(wanted - (ctx.clock.now() - startedMono)));
      saveLastPoll(ctx.config.state_dir, {
        at: new Date(started).toISOString(),
        ok: true,
        duration_ms: summary.durationMs,
        scripts: summary.scripts,
        script_errors: summary.scriptErrors,
        commands: summary.commands,
        next_poll_in_ms: delay,
      });
    } catch (err) {
      failures++;
      if (options.signal.aborted) {
        ctx.logger.warn(`poll interrupted: the agent is stopping (${(err as Error).message})`);
        break;
      }
      delay = backoffDelayMs(failures, intervalMs, capMs, options.random);
      if (err instanceof ApiError && err.retryAfterMs)
        delay = Math.min(capMs, Math.max(delay, err.retryAfterMs));
      let message = (err as Error).message;
      if (err instanceof ApiError && [401, 403, 404].includes(err.status)) {
        // The token was rotated or revoked, the device is not approved (any more), or it was deleted:
        // register again; a token issued now is used right away.
        try {
          const renewed = await registerOnce(ctx, current.uuid, options.signal);
          if (renewed) {
            current = renewed;
            delay = Math.min(delay, 1000);
            message += "; registered again and received a new token";
          } else {
            message += "; registered again, the device is waiting for approval";
          }
        } catch (regErr) {
          message += `; registering again failed: ${(regErr as Error).message}`;
        }
      }
      ctx.logger.error({ failures, retry_in_ms: delay }, `poll failed: ${message}`);
      saveLastPoll(ctx.config.state_dir, {
        at: new Date(started).toISOString(),
        ok: false,
        duration_ms: Date.now() - started,
        error: message,
        next_poll_in_ms: delay,
      });
    }
    polls++;
    if (options.maxPolls && polls >= options.maxPolls) break;
    if (failures === 0 && lastPoll) {
      const woken = await idle(ctx, current, delay, lastPoll.remoteAccessRequested, options.signal, {
        acceptImmediate: immediateWakes < 2,
      });
      immediateWakes = woken === "at once" ? immediateWakes + 1 : 0;
    } else await ctx.clock.sleep(delay, options.signal);
  }
  return failures;
}
