import type { Database, Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isPlainObject } from "../platform/json-body";
import type { Logger } from "../platform/logger";
import type { E2EConfig } from "./config";
import { JourneyError, validateJourney } from "./journeys";
import { acquireLock, clearStaleLocks, releaseLockHeldBy } from "./locks";
import {
  type CreateRunBody,
  checkMetadataSize,
  createBodyErrors,
  failStage,
  invalidRequest as invalid,
  LEGACY_CREATE_FIELDS,
  type RunRow,
  type RunView,
  runView,
} from "./model";
import { LOCK_CHANNEL, waitForNotification } from "./notify";
import { RUN_COLUMNS } from "./runs";
import { type SeedFailureReason, seedEnvironment } from "./seed";

/** The create body as createRun uses it: texts trimmed, optional fields defaulted. */
type NewRun = Required<Omit<CreateRunBody, "journey_ids">> & {
  journey_ids: string[] | undefined;
  idempotency_key: string | null;
};

/**
 * What the spec checks before the body's shape, in its order of concern: legacy fields, the
 * environment label and its policy, then the protocol version (so a missing suite_id with an
 * unsupported protocol version answers 422 protocol_mismatch, not 400). Runs before the route's
 * schema; a body that is not an object is left to the schema. Returns the protocol version.
 */
export function createPreconditions(e2e: E2EConfig, body: unknown, protocolHeader: string | null): string {
  if (isPlainObject(body)) {
    const errors = createBodyErrors(body);
    failStage(errors, (e) => (LEGACY_CREATE_FIELDS as readonly string[]).includes(e.field));
    failStage(errors, (e) => e.field === "environment_label");
    const environment = String(body.environment_label).trim();
    if (!e2e.allowedEnvironments.includes(environment)) {
      throw invalid(
        `Environment '${environment}' is not approved for E2E runs. Allowed: ${e2e.allowedEnvironments.join(", ")}.`,
        { field: "environment_label", allowed: e2e.allowedEnvironments },
      );
    }
  }
  return checkProtocol(e2e, protocolHeader);
}

/** The create body as createRun uses it: texts trimmed, optional fields defaulted. */
function newRun(body: CreateRunBody): NewRun {
  checkMetadataSize(body.metadata);
  const key = body.idempotency_key?.trim() ?? "";
  return {
    suite_id: body.suite_id.trim(),
    environment_label: body.environment_label.trim(),
    trigger_source: body.trigger_source,
    journey_ids: body.journey_ids?.map((j) => j.trim()),
    idempotency_key: key === "" ? null : key,
    metadata: body.metadata ?? {},
  };
}

function checkProtocol(e2e: E2EConfig, header: string | null): string {
  const version = header?.trim() ?? "";
  if (!version)
    throw new AppError(422, "protocol_mismatch", "Missing required X-E2E-Protocol-Version header.");
  if (!e2e.protocolVersions.includes(version)) {
    throw new AppError(
      422,
      "protocol_mismatch",
      `Unsupported protocol version '${version.slice(0, 50)}'. Supported: ${e2e.protocolVersions.join(", ")}.`,
      { supported: e2e.protocolVersions },
    );
  }
  return version;
}

function selectJourneys(e2e: E2EConfig, suiteId: string, requested: string[] | undefined): string[] {
  const suite = e2e.suites.get(suiteId);
  if (!suite)
    throw invalid(`Unknown suite '${suiteId}'.`, { field: "suite_id", known: [...e2e.suites.keys()].sort() });
  if (!requested || requested.length === 0) return [...suite];
  const outside = requested.filter((j) => !suite.includes(j));
  if (outside.length > 0) {
    throw invalid(`Invalid journeys selected: ${outside.join(", ")} (not in suite '${suiteId}').`, {
      field: "journey_ids",
      invalid: outside,
    });
  }
  const duplicate = requested.find((j, i) => requested.indexOf(j) !== i);
  if (duplicate) throw invalid(`journey_ids lists '${duplicate}' more than once.`, { field: "journey_ids" });
  return requested;
}

function sameSelection(run: RunRow, suiteId: string, journeys: string[]): boolean {
  return (
    run.suite_id === suiteId &&
    run.journey_ids.length === journeys.length &&
    run.journey_ids.every((j, i) => j === journeys[i])
  );
}

async function findIdempotentRun(sql: Sql, environment: string, key: string): Promise<RunRow | undefined> {
  const [row] = await sql<RunRow[]>`
    select ${sql.unsafe(RUN_COLUMNS)} from e2e_runs
    where environment_label = ${environment} and idempotency_key = ${key} and idempotency_expires_at > now()
    order by created_at desc limit 1`;
  return row;
}

function replay(run: RunRow, suiteId: string, journeys: string[]): CreateRunOutcome {
  if (!sameSelection(run, suiteId, journeys)) {
    throw invalid(
      `Idempotency key '${run.idempotency_key}' was already used in environment '${run.environment_label}' for a different suite or journey selection.`,
      { field: "idempotency_key", run_id: run.id },
    );
  }
  return { run: runView(run), replayed: true };
}

export interface CreateRunInput {
  body: CreateRunBody;
  /** From createPreconditions. */
  protocolVersion: string;
  runnerId: string;
}

export interface CreateRunOutcome {
  run: RunView;
  replayed: boolean;
}

/**
 * POST /e2e/runs: validation in the documented order, idempotency on (environment, key), the
 * environment lock, the seed (a job; this waits for it), then one transaction for the run and
 * its queued results. Any failure after the lock releases it.
 */
export async function createRun(
  database: Database,
  e2e: E2EConfig,
  logger: Logger,
  input: CreateRunInput,
): Promise<CreateRunOutcome> {
  const { sql } = database;
  const { protocolVersion } = input;
  const body = newRun(input.body);
  const journeys = selectJourneys(e2e, body.suite_id, body.journey_ids);
  for (const journeyId of journeys) {
    try {
      validateJourney(e2e.journeysDir, journeyId);
    } catch (error) {
      if (error instanceof JourneyError) {
        throw new AppError(400, "invalid_action_expectation", error.message, { journey_id: journeyId });
      }
      throw error;
    }
  }
  const key = body.idempotency_key;
  const environment = e2e.environments.get(body.environment_label)!;
  if (key) {
    const hit = await findIdempotentRun(sql, environment.label, key);
    if (hit) return replay(hit, body.suite_id, journeys);
  }

  const holder = crypto.randomUUID();
  await clearStaleLocks(sql, e2e, environment.label);
  let acquired = await acquireLock(sql, environment.label, holder, key, input.runnerId);
  if (!acquired && key) {
    // Another request may be creating the run for this very key: wait for it instead of a 409.
    const waitMs = (environment.seedTimeoutS + e2e.seedPickupGraceS) * 1000;
    // The run with the key, or null once the key is no longer in flight and no run has it.
    const settled = await waitForNotification<RunRow | null>(
      sql,
      LOCK_CHANNEL,
      environment.label,
      async () => {
        // The lock is read before the run: a run commits together with its lock binding, so once the
        // lock is seen bound (or gone) the run is visible to the next statement. The other order
        // can miss a run committed between the two reads and answer 409 to a replay.
        const [lock] = await sql<{ idempotency_key: string | null; run_id: string | null }[]>`
          select idempotency_key, run_id::text as run_id from e2e_environment_locks where environment_label = ${environment.label}`;
        if (lock && lock.idempotency_key === key && lock.run_id === null) return undefined; // still in flight
        return (await findIdempotentRun(sql, environment.label, key)) ?? null;
      },
      waitMs,
    );
    if (settled) return replay(settled, body.suite_id, journeys);
    acquired = await acquireLock(sql, environment.label, holder, key, input.runnerId);
  }
  if (!acquired) {
    const [lock] = await sql<{ run_id: string | null }[]>`
      select run_id::text as run_id from e2e_environment_locks where environment_label = ${environment.label}`;
    throw new AppError(
      409,
      "environment_locked",
      `Environment '${environment.label}' already has an active E2E run.`,
      {
        environment_label: environment.label,
        run_id: lock?.run_id ?? null,
      },
    );
  }

  try {
    if (key) {
      // A run for this key may have been persisted between the first check and the lock.
      const hit = await findIdempotentRun(sql, environment.label, key);
      if (hit) {
        await releaseLockHeldBy(sql, environment.label, holder);
        return replay(hit, body.suite_id, journeys);
      }
    }
    if (environment.seed) {
      const outcome = await seedEnvironment(database, environment, e2e.seedPickupGraceS);
      if (!outcome.ok) {
        const reason: SeedFailureReason =
          outcome.reason ?? (outcome.timedOut ? "timed_out" : outcome.signal ? "signal" : "exit_code");
        const why = {
          not_picked_up: `did not run: no worker picked the seed job up within ${environment.seedTimeoutS} s + ${e2e.seedPickupGraceS} s`,
          not_finished: `did not finish: the worker that started it reported nothing within ${environment.seedTimeoutS} s + ${e2e.seedPickupGraceS} s`,
          timed_out: `timed out after ${environment.seedTimeoutS} s`,
          signal: `ended by signal ${outcome.signal}`,
          exit_code:
            outcome.exitCode === null ? "could not be started" : `exited with code ${outcome.exitCode}`,
        }[reason];
        throw new AppError(
          422,
          "seed_failed",
          `The seed command for environment '${environment.label}' ${why}.`,
          {
            reason,
            exit_code: outcome.exitCode,
            signal: outcome.signal,
            timed_out: outcome.timedOut,
            duration_ms: outcome.durationMs,
            stderr_tail: outcome.stderrTail,
          },
        );
      }
    }
    let run: RunRow;
    try {
      run = await persistRun(sql, e2e, {
        ...body,
        journeys,
        protocolVersion,
        runnerId: input.runnerId,
        holder,
      });
    } catch (error) {
      // persistRun throws database errors and the lost lock's Error, never an AppError.
      logger.error({ err: error, environment: environment.label }, "E2E run could not be persisted");
      throw new AppError(422, "database_error", "Failed to create run.");
    }
    logger.info(
      { runId: run.id, suite: run.suite_id, environment: run.environment_label, runner: input.runnerId },
      "E2E run created",
    );
    return { run: runView(run), replayed: false };
  } catch (error) {
    await releaseLockHeldBy(sql, environment.label, holder).catch((releaseError) =>
      logger.error({ err: releaseError, environment: environment.label }, "E2E lock release failed"),
    );
    throw error;
  }
}

async function persistRun(
  sql: Sql,
  e2e: E2EConfig,
  input: NewRun & { journeys: string[]; protocolVersion: string; runnerId: string; holder: string },
): Promise<RunRow> {
  return sql.begin(async (tx) => {
    const key = input.idempotency_key;
    const [run] = await tx<RunRow[]>`
      insert into e2e_runs (suite_id, journey_ids, environment_label, trigger_source, protocol_version, runner_id,
        idempotency_key, idempotency_expires_at, status, metadata, started_at)
      values (${input.suite_id}, ${input.journeys}::text[], ${input.environment_label}, ${input.trigger_source},
        ${input.protocolVersion}, ${input.runnerId}, ${key},
        case when ${key}::text is null then null else now() + make_interval(secs => ${e2e.idempotencyTtlS}) end,
        'queued', ${JSON.stringify(input.metadata)}::jsonb, now())
      returning ${tx.unsafe(RUN_COLUMNS)}`;
    await tx`
      insert into e2e_run_results (run_id, journey_id, position)
      select ${run!.id}::uuid, journey, ordinality::int - 1
      from unnest(${input.journeys}::text[]) with ordinality as j(journey, ordinality)`;
    const bound = await tx`
      update e2e_environment_locks set run_id = ${run!.id}
      where environment_label = ${input.environment_label} and holder = ${input.holder}`;
    if (bound.count !== 1) throw new Error("the environment lock was lost before the run was persisted");
    await tx`select pg_notify(${LOCK_CHANNEL}, ${input.environment_label})`;
    return run!;
  });
}
