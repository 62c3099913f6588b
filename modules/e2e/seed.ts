import { spawn } from "node:child_process";
import { enqueueJob } from "../jobs/service";
import type { Database } from "../platform/database";
import type { Logger } from "../platform/logger";
import type { E2EConfig, E2EEnvironment } from "./config";
import { SEED_CHANNEL, waitForNotification } from "./notify";

export const SEED_TASK = "e2e_seed";

type SeedRunRow = {
  status: "pending" | "running" | "succeeded" | "failed";
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  stderr_tail: string | null;
  duration_ms: number | null;
};
const STDERR_TAIL_CHARS = 2000;
/** How long a create request waits beyond the seed timeout for a worker to pick the job up. */

/**
 * Why a seed failed: `exit_code` (non-zero exit), `signal` (killed by a signal), `timed_out`
 * (killed at seed_timeout_s), `not_picked_up` (no worker started the job in time; it never ran),
 * `not_finished` (a worker started it but reported nothing in time, e.g. it died).
 */
export type SeedFailureReason = "exit_code" | "signal" | "timed_out" | "not_picked_up" | "not_finished";

export interface SeedOutcome {
  ok: boolean;
  /** Set on the outcomes of seeds that never reported (see seedEnvironment). */
  reason?: "not_picked_up" | "not_finished";
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stderrTail: string;
  durationMs: number;
}

/**
 * Runs a seed command (argv, no shell) in `cwd`, killing its whole process group at the timeout.
 * Resolves on process exit; output pipes left open by grandchildren do not delay it.
 */
export function runSeedCommand(argv: string[], cwd: string, timeoutS: number): Promise<SeedOutcome> {
  const startedAt = Date.now();
  return new Promise((resolve) => {
    let stderr = "";
    let timedOut = false;
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd,
      detached: true,
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS * 2);
    });
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutS * 1000);
    const finish = (exitCode: number | null, signal: string | null, extra = "") => {
      clearTimeout(timer);
      if (timedOut) killGroup();
      child.stderr?.destroy();
      const tail = (stderr + extra).slice(-STDERR_TAIL_CHARS);
      resolve({
        ok: !timedOut && exitCode === 0,
        exitCode,
        signal,
        timedOut,
        stderrTail: tail,
        durationMs: Date.now() - startedAt,
      });
    };
    child.once("error", (error) => finish(null, null, `could not start ${argv[0]}: ${error.message}`));
    child.once("exit", (code, signal) => finish(code, signal));
  });
}

/** The e2e_seed job: runs the environment's configured seed and publishes the outcome. */
export async function executeSeedJob(
  database: Database,
  e2e: E2EConfig,
  seedId: string,
  logger: Logger,
): Promise<SeedOutcome | undefined> {
  // Only a pending seed runs: one the create request already gave up on must never run late.
  const [row] = await database.sql<{ environmentLabel: string }[]>`
    update e2e_seed_runs set status = 'running' where id = ${seedId} and status = 'pending'
    returning environment_label as "environmentLabel"`;
  if (!row) {
    logger.warn({ seedId }, "E2E seed skipped: unknown or no longer pending");
    return undefined;
  }
  const environment = e2e.environments.get(row.environmentLabel);
  const outcome: SeedOutcome = environment?.seed
    ? await runSeedCommand(environment.seed, e2e.directory, environment.seedTimeoutS)
    : {
        ok: false,
        exitCode: null,
        signal: null,
        timedOut: false,
        stderrTail: `environment '${row.environmentLabel}' has no seed command`,
        durationMs: 0,
      };
  await database.sql.begin(async (tx) => {
    await tx`
      update e2e_seed_runs set status = ${outcome.ok ? "succeeded" : "failed"}, exit_code = ${outcome.exitCode},
        signal = ${outcome.signal}, timed_out = ${outcome.timedOut}, stderr_tail = ${outcome.stderrTail},
        duration_ms = ${outcome.durationMs}, finished_at = now()
      where id = ${seedId}`;
    await tx`select pg_notify(${SEED_CHANNEL}, ${seedId})`;
  });
  logger.info(
    {
      environment: row.environmentLabel,
      ok: outcome.ok,
      exitCode: outcome.exitCode,
      timedOut: outcome.timedOut,
      ms: outcome.durationMs,
    },
    "E2E seed finished",
  );
  return outcome;
}

/**
 * Queues the seed job for `environment` and waits for its outcome (LISTEN/NOTIFY wake-up). When no
 * worker finished it within the seed timeout plus a pickup grace, the outcome is a failure with
 * `reason` `not_picked_up` (the job will never run) or `not_finished` (a worker started it).
 */
export async function seedEnvironment(
  database: Database,
  environment: E2EEnvironment,
  pickupGraceS: number,
): Promise<SeedOutcome> {
  const startedAt = Date.now();
  const seedId = await database.sql.begin(async (tx) => {
    const [row] = await tx<{ id: string }[]>`
      insert into e2e_seed_runs (environment_label) values (${environment.label}) returning id`;
    await enqueueJob(tx, SEED_TASK, { seed_id: row!.id }, { maxAttempts: 1 });
    return row!.id;
  });
  const read = async (): Promise<SeedOutcome | undefined> => {
    const [row] = await database.sql<SeedRunRow[]>`
      select status, exit_code, signal, timed_out, stderr_tail, duration_ms from e2e_seed_runs where id = ${seedId}`;
    if (!row || (row.status !== "succeeded" && row.status !== "failed")) return undefined;
    return {
      ok: row.status === "succeeded",
      exitCode: row.exit_code,
      signal: row.signal,
      timedOut: row.timed_out,
      stderrTail: row.stderr_tail ?? "",
      durationMs: row.duration_ms ?? 0,
    };
  };
  const outcome = await waitForNotification(
    database.sql,
    SEED_CHANNEL,
    seedId,
    read,
    (environment.seedTimeoutS + pickupGraceS) * 1000,
  );
  if (outcome) return outcome;
  // Nobody ran it in time: make sure it never runs later against a run that does not exist.
  const abandoned = await database.sql`
    update e2e_seed_runs set status = 'failed', stderr_tail = 'no worker picked the seed job up in time',
      finished_at = now()
    where id = ${seedId} and status = 'pending'
    returning id`;
  const late = abandoned.length === 0 ? await read() : undefined;
  if (late) return late; // it finished just after the wait ended
  return {
    ok: false,
    reason: abandoned.length > 0 ? "not_picked_up" : "not_finished",
    exitCode: null,
    signal: null,
    timedOut: false,
    stderrTail: "",
    durationMs: Date.now() - startedAt,
  };
}
