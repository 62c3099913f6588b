import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { executeJourney, type JourneyOutcome, type RunInfo } from "./executor";
import { reportBrokenRun, reportNotCreated, reportRun } from "./report";

export const DEFAULT_JOURNEYS_DIR = path.resolve(import.meta.dir, "../../../e2e/journeys");

export interface RunnerCredentials {
  apiUrl: string;
  runnerId: string | undefined;
  runnerToken: string | undefined;
  protocolVersion: string;
}

export interface RunOptions extends RunnerCredentials {
  suite: string;
  environment: string;
  journeys: string[] | undefined;
  idempotencyKey: string | undefined;
  trigger: "manual" | "ci";
  /** Sent as the run's metadata (`commit`, `branch`): the runs page finds flaky journeys by commit. */
  commit?: string;
  branch?: string;
  operatorToken: string | undefined;
  journeysDir: string;
  logDir: string;
  json: boolean;
  /** Where to write the JUnit XML report (also when the run fails, is cancelled or cannot be created). */
  junit?: string;
  /** Aborted on Ctrl-C: the current step stops and the run is cancelled. */
  signal: AbortSignal;
  out(text: string): void;
  err(text: string): void;
}

export const EXIT = { passed: 0, notPassed: 1, error: 2, interrupted: 130 } as const;

interface ApiReply {
  status: number;
  body: any;
}

/** The E2E API as a runner sees it. */
export class E2EApi {
  constructor(readonly options: RunnerCredentials) {}

  async call(
    method: string,
    pathname: string,
    body?: unknown,
    contentType = "application/json",
    timeoutMs = 180_000,
  ): Promise<ApiReply> {
    const response = await fetch(`${this.options.apiUrl}${pathname}`, {
      method,
      headers: {
        "x-e2e-runner-id": this.options.runnerId ?? "",
        authorization: `Bearer ${this.options.runnerToken ?? ""}`,
        "x-e2e-protocol-version": this.options.protocolVersion,
        "content-type": contentType,
        accept: "application/json",
      },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = { error: { code: "invalid_response", message: text.slice(0, 200) } };
    }
    return { status: response.status, body: parsed };
  }
}

export function describeError(reply: ApiReply): string {
  const error = reply.body?.error;
  return error ? `${reply.status} ${error.code}: ${error.message}` : `HTTP ${reply.status}`;
}

export function checkCredentials(options: RunnerCredentials): string | undefined {
  if (!options.runnerId) return "a runner id is required (--runner-id or OUTPOST_E2E_RUNNER_ID)";
  if (!options.runnerToken) return "a runner token is required (--runner-token or OUTPOST_E2E_RUNNER_TOKEN)";
  if (Buffer.byteLength(options.runnerToken) < 32) return "the runner token must be at least 32 bytes";
  return undefined;
}

/** The run on the runs page; the runner prints it at start and in its summary. */
export function consoleUrl(apiUrl: string, runId: string): string {
  return `${apiUrl}/e2e?run=${encodeURIComponent(runId)}`;
}

const FINAL = ["passed", "failed", "cancelled", "blocked", "skipped"];
const MARK: Record<string, string> = {
  passed: "✔",
  failed: "✘",
  cancelled: "■",
  blocked: "!",
  skipped: "-",
  queued: "·",
  running: "…",
};

/**
 * `outpost e2e run`: creates (or reuses) the run, executes the journeys still open in order
 * (running, then the final status), writes and uploads each e2e_log.v1 log, prints a summary.
 * Exit: 0 passed, 1 any other final status, 2 usage/API errors, 130 interrupted (run cancelled).
 */
export async function runE2E(options: RunOptions): Promise<number> {
  const problem = checkCredentials(options);
  if (problem) {
    options.err(`outpost e2e: ${problem}\n`);
    return EXIT.error;
  }
  const api = new E2EApi(options);
  let created: ApiReply;
  try {
    created = await api.call("POST", "/e2e/runs", {
      suite_id: options.suite,
      environment_label: options.environment,
      trigger_source: options.trigger,
      ...(options.journeys?.length ? { journey_ids: options.journeys } : {}),
      ...(options.idempotencyKey ? { idempotency_key: options.idempotencyKey } : {}),
      metadata: {
        runner: "outpost-cli",
        host: process.env.HOSTNAME ?? undefined,
        commit: options.commit || undefined,
        branch: options.branch || undefined,
      },
    });
  } catch (error) {
    return notCreated(options, `cannot reach ${options.apiUrl}: ${(error as Error).message}`);
  }
  if (created.status !== 201 && created.status !== 200)
    return notCreated(options, `the run was not created: ${describeError(created)}`);
  const run = created.body.data;
  const info: RunInfo = {
    run_id: run.id,
    suite_id: run.suite_id,
    environment_label: run.environment_label,
    trigger_source: run.trigger_source,
    protocol_version: run.protocol_version,
  };
  const url = consoleUrl(options.apiUrl, run.id);
  options.err(
    `E2E run ${run.id} ${created.status === 200 ? "reused (idempotent replay)" : "created"} · suite ${run.suite_id} · environment ${run.environment_label}\n  console: ${url}\n`,
  );
  const runLogDir = path.join(options.logDir, run.id);
  const executed = new Map<string, JourneyOutcome>();
  try {
    return await executeRun(api, options, run, info, runLogDir, created.status === 200, executed);
  } catch (error) {
    // The server went away mid-run (network error, restart, timeout) or something else broke: try
    // to cancel the run so its environment lock is not held until the stale-run job, then exit 2.
    const after = await api
      .call("POST", `/e2e/runs/${run.id}/cancel`, undefined, "application/json", 10_000)
      .then(
        (reply) => (reply.status === 202 ? (reply.body?.data?.status as string | undefined) : undefined),
        () => undefined,
      );
    const message = String((error as Error)?.message ?? error).replace(/\s+/g, " ");
    const outcome =
      after === "cancelled"
        ? "was cancelled"
        : after
          ? `had already ended ${after}`
          : "could not be cancelled (the server cancels it after run_timeout_s)";
    options.err(`outpost e2e: run ${run.id} stopped: ${message}; the run ${outcome}.\n`);
    if (options.junit)
      reportBrokenRun(
        options.junit,
        run,
        after,
        url,
        `run ${run.id} stopped: ${message}; the run ${outcome}`,
        executed,
      );
    return EXIT.error;
  }
}

function notCreated(options: RunOptions, problem: string): number {
  options.err(`outpost e2e: ${problem}\n`);
  if (options.junit) reportNotCreated(options.junit, options.suite, options.environment, problem);
  return EXIT.error;
}

async function executeRun(
  api: E2EApi,
  options: RunOptions,
  run: any,
  info: RunInfo,
  runLogDir: string,
  replayed: boolean,
  executed: Map<string, JourneyOutcome>,
): Promise<number> {
  mkdirSync(runLogDir, { recursive: true });

  const results = await api.call("GET", `/e2e/runs/${run.id}/results`);
  const open: string[] = (results.body?.data ?? [])
    .filter((r: any) => !FINAL.includes(r.status))
    .map((r: any) => r.journey_id);
  const logFiles = new Map<string, string>();
  let interrupted = false;
  for (const [index, journeyId] of run.journey_ids.entries() as IterableIterator<[number, string]>) {
    if (!open.includes(journeyId)) continue;
    if (options.signal.aborted) {
      interrupted = true;
      break;
    }
    await api.call("POST", `/e2e/runs/${run.id}/results`, {
      results: [{ journey_id: journeyId, status: "running" }],
    });
    options.err(`  … ${journeyId}\n`);
    const outcome = await executeJourney(journeyId, info, {
      apiUrl: options.apiUrl,
      journeysDir: options.journeysDir,
      operatorToken: options.operatorToken,
      signal: options.signal,
    });
    const file = path.join(runLogDir, `${String(index + 1).padStart(3, "0")}-${journeyId}.jsonl`);
    writeFileSync(file, outcome.log);
    logFiles.set(journeyId, file);
    executed.set(journeyId, outcome);
    if (options.signal.aborted) {
      interrupted = true;
      await api
        .call("PUT", `/e2e/runs/${run.id}/results/${journeyId}/log`, outcome.log, "application/x-ndjson")
        .catch(() => {});
      break;
    }
    const upload = await api.call(
      "PUT",
      `/e2e/runs/${run.id}/results/${journeyId}/log`,
      outcome.log,
      "application/x-ndjson",
    );
    if (upload.status !== 200)
      options.err(`  (log upload for ${journeyId} failed: ${describeError(upload)})\n`);
    const submitted = await api.call("POST", `/e2e/runs/${run.id}/results`, {
      results: [
        {
          journey_id: journeyId,
          status: outcome.status,
          failure_step: outcome.failureStep,
          failure_reason: outcome.failureReason,
          duration_ms: outcome.durationMs,
        },
      ],
    });
    if (submitted.status !== 202) {
      options.err(`outpost e2e: results for ${journeyId} were not accepted: ${describeError(submitted)}\n`);
      if (submitted.body?.error?.code === "invalid_request" && /cancelled/.test(submitted.body.error.message))
        break;
    }
  }
  if (interrupted) {
    const cancelled = await api.call("POST", `/e2e/runs/${run.id}/cancel`).catch(() => undefined);
    options.err(
      `Interrupted: run ${run.id} ${cancelled?.status === 202 ? "cancelled" : "could not be cancelled"}.\n`,
    );
  }
  const final = await api.call("GET", `/e2e/runs/${run.id}`);
  const finalResults = await api.call("GET", `/e2e/runs/${run.id}/results`);
  const status: string = final.body?.data?.status ?? "unknown";
  const journeys = (finalResults.body?.data ?? []) as any[];
  const url = consoleUrl(options.apiUrl, run.id);
  if (options.junit) await reportRun(options.junit, api, run, status, url, journeys, executed);
  if (options.json) {
    options.out(
      `${JSON.stringify(
        {
          run_id: run.id,
          status,
          suite_id: run.suite_id,
          environment_label: run.environment_label,
          trigger_source: run.trigger_source,
          replayed,
          console_url: url,
          junit_file: options.junit ?? null,
          journeys: journeys.map((j) => ({
            journey_id: j.journey_id,
            status: j.status,
            failure_step: j.failure_step,
            failure_reason: j.failure_reason,
            duration_ms: j.duration_ms,
            log_file: logFiles.get(j.journey_id) ?? null,
          })),
          log_dir: runLogDir,
        },
        null,
        2,
      )}\n`,
    );
  } else {
    const width = Math.max(...journeys.map((j) => j.journey_id.length), 10);
    const lines = journeys.map((j) => {
      const reason = j.status === "failed" ? `  at ${j.failure_step}: ${j.failure_reason}` : "";
      const duration = j.duration_ms === null ? "" : `${j.duration_ms} ms`;
      return `  ${MARK[j.status] ?? "?"} ${j.journey_id.padEnd(width)}  ${j.status.padEnd(9)} ${duration.padStart(9)}${reason}`;
    });
    const counts: Record<string, number> = {};
    for (const j of journeys) counts[j.status] = (counts[j.status] ?? 0) + 1;
    options.out(
      [
        `E2E run ${run.id} · suite ${run.suite_id} · environment ${run.environment_label}`,
        ...lines,
        `Run ${status}: ${Object.entries(counts)
          .map(([s, n]) => `${n} ${s}`)
          .join(", ")}. Logs in ${runLogDir}`,
        `Console: ${url}`,
        ...(options.junit ? [`JUnit report: ${options.junit}`] : []),
        "",
      ].join("\n"),
    );
  }
  if (interrupted) return EXIT.interrupted;
  return status === "passed" ? EXIT.passed : EXIT.notPassed;
}
