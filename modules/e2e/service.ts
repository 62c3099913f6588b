import { createHash, timingSafeEqual } from "node:crypto";
import type { Database, Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import type { Logger } from "../platform/logger";
import { type E2EConfig, MIN_TOKEN_BYTES, RUNNER_ID_PATTERN } from "./config";
import { JourneyError, validateJourney } from "./journeys";
import {
  aggregateRunStatus,
  isFinalResult,
  isFinalRun,
  isResultStatus,
  type ResultRow,
  type ResultView,
  type RunRow,
  type RunView,
  resultRow,
  resultView,
  runRow,
  runView,
  toDate,
} from "./model";
import { LOCK_CHANNEL, waitForNotification } from "./notify";
import { redact, redactText } from "./redaction";
import type { ResultStatus } from "./schema";
import { type SeedFailureReason, seedEnvironment } from "./seed";

export const PROTOCOL_HEADER = "x-e2e-protocol-version";
export const RUNNER_HEADER = "x-e2e-runner-id";
const MAX_METADATA_BYTES = 16 * 1024;
const MAX_TEXT = 2000;

const RUN_COLUMNS = `id::text as id, suite_id, journey_ids, environment_label, trigger_source, protocol_version, runner_id,
  idempotency_key, status, metadata, started_at, finished_at`;
const RESULT_COLUMNS = `id::text as id, run_id::text as run_id, journey_id, position, status, failure_step, failure_reason,
  log_ref, started_at, finished_at, duration_ms::float8 as duration_ms`;

const invalid = (message: string, details?: unknown) =>
  new AppError(400, "invalid_request", message, details);
const runNotFound = () => new AppError(404, "not_found", "There is no E2E run with this id.");

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isRunId(value: string): boolean {
  return UUID.test(value);
}

// ---------------------------------------------------------------- runner credentials

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

const DUMMY_DIGEST = digest("outpost-e2e-no-such-runner-padding-000000");

/**
 * Checks X-E2E-Runner-ID + Authorization: Bearer against the configured runners. The token
 * comparison takes the same time whether the runner exists, and wherever the tokens differ.
 */
export function authenticateRunner(
  e2e: E2EConfig,
  runnerId: string | null,
  authorization: string | null,
): string {
  const fail = () => new AppError(401, "unauthorized", "Valid E2E runner credentials are required.");
  const match = authorization?.match(/^bearer\s+(\S+)\s*$/i);
  const token = match?.[1] ?? "";
  const id = runnerId?.trim() ?? "";
  const expected = e2e.runners.get(id);
  const same = timingSafeEqual(digest(token), expected ? digest(expected) : DUMMY_DIGEST);
  if (!RUNNER_ID_PATTERN.test(id) || Buffer.byteLength(token) < MIN_TOKEN_BYTES || !expected || !same)
    throw fail();
  return id;
}

// ---------------------------------------------------------------- suites

export function listSuites(e2e: E2EConfig) {
  return [...e2e.suites.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([id, journeyIds]) => ({ id, journey_ids: journeyIds }));
}

// ---------------------------------------------------------------- create

export interface CreateRunBody {
  suite_id: string;
  environment_label: string;
  trigger_source: "manual" | "ci";
  journey_ids: string[] | undefined;
  idempotency_key: string | null;
  metadata: Record<string, unknown>;
}

const CREATE_FIELDS = [
  "suite_id",
  "environment_label",
  "trigger_source",
  "journey_ids",
  "idempotency_key",
  "metadata",
];

/** Checks the create body's shape; every problem is listed in details.errors, the first names the field. */
export function parseCreateBody(body: unknown): CreateRunBody {
  if (!isObject(body)) throw invalid("The request body must be a JSON object.", { field: null, errors: [] });
  const errors: { field: string; message: string }[] = [];
  const add = (field: string, message: string) => errors.push({ field, message });
  for (const legacy of ["client_version", "server_version"]) {
    if (legacy in body)
      add(legacy, `${legacy} is a legacy field and is not accepted; send the X-E2E-Protocol-Version header.`);
  }
  for (const key of Object.keys(body)) {
    if (!CREATE_FIELDS.includes(key) && key !== "client_version" && key !== "server_version") {
      add(key, `${key} is not a known property.`);
    }
  }
  for (const field of ["suite_id", "environment_label", "trigger_source"]) {
    const value = body[field];
    if (value === undefined || value === null) add(field, `${field} is required.`);
    else if (typeof value !== "string" || value.trim() === "")
      add(field, `${field} must be a non-empty string.`);
    else if (value.length > 200) add(field, `${field} is too long.`);
  }
  if (
    typeof body.trigger_source === "string" &&
    body.trigger_source.trim() &&
    !["manual", "ci"].includes(body.trigger_source)
  ) {
    add("trigger_source", "trigger_source must be manual or ci.");
  }
  if (body.journey_ids !== undefined) {
    if (
      !Array.isArray(body.journey_ids) ||
      body.journey_ids.some((j) => typeof j !== "string" || j.trim() === "")
    ) {
      add("journey_ids", "journey_ids must be a list of journey ids.");
    } else if (body.journey_ids.length > 500) add("journey_ids", "journey_ids lists too many journeys.");
  }
  if (body.idempotency_key !== undefined && body.idempotency_key !== null) {
    if (typeof body.idempotency_key !== "string")
      add("idempotency_key", "idempotency_key must be a string or null.");
    else if (body.idempotency_key.length > 255)
      add("idempotency_key", "idempotency_key must be at most 255 characters.");
  }
  if (body.metadata !== undefined) {
    if (!isObject(body.metadata)) add("metadata", "metadata must be an object.");
    else if (Buffer.byteLength(JSON.stringify(body.metadata)) > MAX_METADATA_BYTES) {
      add("metadata", `metadata must be at most ${MAX_METADATA_BYTES} bytes of JSON.`);
    }
  }
  if (errors.length > 0) throw invalid(errors[0]!.message, { field: errors[0]!.field, errors });
  const key = typeof body.idempotency_key === "string" ? body.idempotency_key.trim() : "";
  return {
    suite_id: (body.suite_id as string).trim(),
    environment_label: (body.environment_label as string).trim(),
    trigger_source: body.trigger_source as "manual" | "ci",
    journey_ids: (body.journey_ids as string[] | undefined)?.map((j) => j.trim()),
    idempotency_key: key === "" ? null : key,
    metadata: (body.metadata as Record<string, unknown> | undefined) ?? {},
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
  const [row] = await sql.unsafe<RunRow[]>(
    `select ${RUN_COLUMNS} from e2e_runs
     where environment_label = $1 and idempotency_key = $2 and idempotency_expires_at > now()
     order by created_at desc limit 1`,
    [environment, key],
  );
  return row && runRow(row);
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

/** Locks that no longer protect anything: a creator that died before persisting, or a finished run. */
async function clearStaleLocks(sql: Sql, e2e: E2EConfig, environment?: string): Promise<number> {
  const staleAfterS =
    Math.max(...[...e2e.environments.values()].map((e) => e.seedTimeoutS), 1) + e2e.seedPickupGraceS + 60;
  const rows = await sql<{ environment_label: string }[]>`
    delete from e2e_environment_locks l
    where (${environment ?? null}::text is null or l.environment_label = ${environment ?? null})
      and ((l.run_id is null and l.acquired_at < now() - make_interval(secs => ${staleAfterS}))
        or exists (select 1 from e2e_runs r where r.id = l.run_id and r.status not in ('queued', 'running')))
    returning environment_label`;
  for (const row of rows) await sql`select pg_notify(${LOCK_CHANNEL}, ${row.environment_label})`;
  return rows.length;
}

async function acquireLock(
  sql: Sql,
  environment: string,
  holder: string,
  key: string | null,
  runnerId: string,
) {
  const rows = await sql`
    insert into e2e_environment_locks (environment_label, holder, idempotency_key, runner_id)
    values (${environment}, ${holder}, ${key}, ${runnerId})
    on conflict (environment_label) do nothing
    returning holder`;
  return rows.length === 1;
}

async function releaseLockHeldBy(sql: Sql, environment: string, holder: string) {
  await sql.begin(async (tx) => {
    await tx`delete from e2e_environment_locks where environment_label = ${environment} and holder = ${holder}`;
    await tx`select pg_notify(${LOCK_CHANNEL}, ${environment})`;
  });
}

export interface CreateRunInput {
  body: unknown;
  protocolHeader: string | null;
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
  const body = parseCreateBody(input.body);
  if (!e2e.allowedEnvironments.includes(body.environment_label)) {
    throw invalid(
      `Environment '${body.environment_label}' is not approved for E2E runs. Allowed: ${e2e.allowedEnvironments.join(", ")}.`,
      { field: "environment_label", allowed: e2e.allowedEnvironments },
    );
  }
  const protocolVersion = checkProtocol(e2e, input.protocolHeader);
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
    const settled = await waitForNotification(
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
        const hit = await findIdempotentRun(sql, environment.label, key);
        return hit ? ({ hit } as const) : ({ lock } as const);
      },
      waitMs,
    );
    if (settled && "hit" in settled && settled.hit) return replay(settled.hit, body.suite_id, journeys);
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
      if (error instanceof AppError) throw error;
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
  input: CreateRunBody & { journeys: string[]; protocolVersion: string; runnerId: string; holder: string },
): Promise<RunRow> {
  return sql.begin(async (tx) => {
    const [run] = await tx.unsafe<RunRow[]>(
      `insert into e2e_runs (suite_id, journey_ids, environment_label, trigger_source, protocol_version, runner_id,
         idempotency_key, idempotency_expires_at, status, metadata, started_at)
       values ($1, $2, $3, $4, $5, $6, $7, case when $7::text is null then null else now() + make_interval(secs => $8) end,
         'queued', $9::jsonb, now())
       returning ${RUN_COLUMNS}`,
      [
        input.suite_id,
        input.journeys,
        input.environment_label,
        input.trigger_source,
        input.protocolVersion,
        input.runnerId,
        input.idempotency_key,
        e2e.idempotencyTtlS,
        JSON.stringify(input.metadata),
      ],
    );
    await tx`
      insert into e2e_run_results (run_id, journey_id, position)
      select ${run!.id}::uuid, journey, ordinality::int - 1
      from unnest(${input.journeys}::text[]) with ordinality as j(journey, ordinality)`;
    const bound = await tx`
      update e2e_environment_locks set run_id = ${run!.id}
      where environment_label = ${input.environment_label} and holder = ${input.holder}`;
    if (bound.count !== 1) throw new Error("the environment lock was lost before the run was persisted");
    await tx`select pg_notify(${LOCK_CHANNEL}, ${input.environment_label})`;
    return runRow(run!);
  });
}

// ---------------------------------------------------------------- read

export interface RunFilters {
  status?: string;
  suite_id?: string;
  environment_label?: string;
  trigger_source?: string;
  limit?: number;
}

export async function listRuns(database: Database, filters: RunFilters = {}): Promise<RunView[]> {
  const limit = Math.min(Math.max(filters.limit ?? 50, 1), 500);
  const rows = await database.sql.unsafe<RunRow[]>(
    `select ${RUN_COLUMNS} from e2e_runs
     where ($1::text is null or status = $1) and ($2::text is null or suite_id = $2)
       and ($3::text is null or environment_label = $3) and ($4::text is null or trigger_source = $4)
     order by started_at desc, id desc limit $5`,
    [
      filters.status ?? null,
      filters.suite_id ?? null,
      filters.environment_label ?? null,
      filters.trigger_source ?? null,
      limit,
    ],
  );
  return rows.map((row) => runView(runRow(row)));
}

export async function findRun(database: Database, runId: string): Promise<RunRow | undefined> {
  if (!isRunId(runId)) return undefined;
  const [row] = await database.sql.unsafe<RunRow[]>(`select ${RUN_COLUMNS} from e2e_runs where id = $1`, [
    runId,
  ]);
  return row && runRow(row);
}

export async function getRun(database: Database, runId: string): Promise<RunView> {
  const run = await findRun(database, runId);
  if (!run) throw runNotFound();
  return runView(run);
}

async function resultRows(sql: Sql, runId: string): Promise<ResultRow[]> {
  const rows = await sql.unsafe<ResultRow[]>(
    `select ${RESULT_COLUMNS} from e2e_run_results where run_id = $1 order by position`,
    [runId],
  );
  return rows.map(resultRow);
}

export async function listResultRows(database: Database, runId: string): Promise<ResultRow[]> {
  return resultRows(database.sql, runId);
}

export async function listResults(database: Database, runId: string): Promise<ResultView[]> {
  if (!(await findRun(database, runId))) throw runNotFound();
  return (await resultRows(database.sql, runId)).map(resultView);
}

// ---------------------------------------------------------------- results

interface ResultSubmit {
  journey_id: string;
  status: ResultStatus;
  failure_step?: string | null;
  failure_reason?: string | null;
  log_ref?: string | null;
  duration_ms?: number;
}

const SUBMIT_FIELDS = ["journey_id", "status", "failure_step", "failure_reason", "log_ref", "duration_ms"];

export function parseResultsBody(body: unknown): ResultSubmit[] {
  if (!isObject(body) || !("results" in body) || body.results === undefined || body.results === null) {
    throw invalid("Results payload is required.", { field: "results" });
  }
  if (!Array.isArray(body.results)) throw invalid("results must be a list.", { field: "results" });
  if (body.results.length === 0) throw invalid("Results payload cannot be empty.", { field: "results" });
  if (body.results.length > 1000) throw invalid("At most 1000 results per request.", { field: "results" });
  const extra = Object.keys(body).filter((k) => k !== "results");
  if (extra.length > 0) throw invalid(`${extra[0]} is not a known property.`, { field: extra[0] });
  const seen = new Set<string>();
  return body.results.map((item, index) => {
    const at = `results[${index}]`;
    if (!isObject(item)) throw invalid(`${at} must be an object.`, { field: at });
    const unknown = Object.keys(item).find((k) => !SUBMIT_FIELDS.includes(k));
    if (unknown) throw invalid(`${at}.${unknown} is not a known property.`, { field: `${at}.${unknown}` });
    if (typeof item.journey_id !== "string" || item.journey_id.trim() === "") {
      throw invalid("Each result must include a journey_id.", { field: `${at}.journey_id` });
    }
    if (item.status === undefined || item.status === null || item.status === "") {
      throw invalid("Each result must include a status.", { field: `${at}.status` });
    }
    if (!isResultStatus(item.status)) {
      throw invalid(
        `${at}.status must be one of queued, running, passed, failed, cancelled, blocked, skipped.`,
        {
          field: `${at}.status`,
        },
      );
    }
    for (const field of ["failure_step", "failure_reason", "log_ref"]) {
      const value = item[field];
      if (value !== undefined && value !== null && typeof value !== "string") {
        throw invalid(`${at}.${field} must be a string or null.`, { field: `${at}.${field}` });
      }
    }
    if (
      item.duration_ms !== undefined &&
      item.duration_ms !== null &&
      (typeof item.duration_ms !== "number" || !Number.isInteger(item.duration_ms) || item.duration_ms < 0)
    ) {
      throw invalid(`${at}.duration_ms must be a non-negative integer.`, { field: `${at}.duration_ms` });
    }
    const journeyId = item.journey_id.trim();
    if (seen.has(journeyId))
      throw invalid(`Journey '${journeyId}' appears more than once.`, { field: `${at}.journey_id` });
    seen.add(journeyId);
    return { ...(item as Record<string, unknown>), journey_id: journeyId } as ResultSubmit;
  });
}

const clip = (value: string | null | undefined) =>
  typeof value === "string" ? value.slice(0, MAX_TEXT) : value;

/**
 * POST /e2e/runs/{id}/results: updates the journeys and the run in one transaction, holding the
 * run row (FOR UPDATE) so concurrent submissions for one run apply one after another. Four round
 * trips: lock+read, update results, update run (only when it changes), commit.
 */
export async function submitResults(
  database: Database,
  logger: Logger,
  runId: string,
  body: unknown,
): Promise<ResultView[]> {
  const results = parseResultsBody(body);
  if (!isRunId(runId)) throw runNotFound();
  try {
    return await database.sql.begin(async (tx) => {
      const [run] = await tx.unsafe<(RunRow & { results: ResultRow[] })[]>(
        `select ${RUN_COLUMNS},
           (select coalesce(json_agg(json_build_object('id', x.id, 'run_id', x.run_id, 'journey_id', x.journey_id,
              'position', x.position, 'status', x.status, 'failure_step', x.failure_step, 'failure_reason', x.failure_reason,
              'log_ref', x.log_ref, 'started_at', x.started_at, 'finished_at', x.finished_at, 'duration_ms', x.duration_ms)
              order by x.position), '[]'::json) from e2e_run_results x where x.run_id = e2e_runs.id) as results
         from e2e_runs where id = $1 for update`,
        [runId],
      );
      if (!run) throw runNotFound();
      if (run.status === "cancelled")
        throw invalid(`Run ${runId} was cancelled; it accepts no more results.`, { field: "results" });
      const unknown = results.filter((r) => !run.journey_ids.includes(r.journey_id)).map((r) => r.journey_id);
      if (unknown.length > 0) {
        throw invalid(`Unknown journeys provided: ${unknown.join(", ")}.`, {
          field: "results",
          journey_ids: unknown,
        });
      }
      const current = new Map(run.results.map((r) => [r.journey_id, resultRow(r)]));
      for (const result of results) {
        const existing = current.get(result.journey_id)!;
        if (isFinalResult(existing.status) && !isFinalResult(result.status)) {
          throw invalid(
            `Journey '${result.journey_id}' already finished as ${existing.status}; it can only change to another final status.`,
            { field: "results", journey_id: result.journey_id },
          );
        }
      }
      // Absent optional fields keep their stored value; a null clears it.
      const keep = <K extends "failure_step" | "failure_reason" | "log_ref">(r: ResultSubmit, key: K) =>
        key in r ? (clip(r[key]) ?? null) : current.get(r.journey_id)![key];
      const updated = await tx.unsafe<ResultRow[]>(
        `update e2e_run_results r set
           status = i.status,
           failure_step = i.failure_step,
           failure_reason = i.failure_reason,
           log_ref = i.log_ref,
           started_at = case when r.started_at is null and i.status <> 'queued' then now() else r.started_at end,
           finished_at = case when i.final then now() else null end,
           duration_ms = coalesce(i.duration_ms,
             case when i.final then (extract(epoch from now() - coalesce(r.started_at, now())) * 1000)::bigint end),
           updated_at = now()
         from (select u.*, u.duration_text::bigint as duration_ms,
                 u.status in ('passed', 'failed', 'cancelled', 'blocked', 'skipped') as final
               from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
                 as u(journey_id, status, failure_step, failure_reason, log_ref, duration_text)) i
         where r.run_id = $1 and r.journey_id = i.journey_id
         returning ${RESULT_COLUMNS.replace(/(^|,\s*)(\w+)/g, "$1r.$2")}`,
        [
          runId,
          results.map((r) => r.journey_id),
          results.map((r) => r.status),
          results.map((r) => keep(r, "failure_step")),
          results.map((r) => keep(r, "failure_reason")),
          results.map((r) => keep(r, "log_ref")),
          results.map((r) =>
            r.duration_ms === undefined || r.duration_ms === null ? null : String(r.duration_ms),
          ),
        ] as never[],
      );
      for (const row of updated) current.set(row.journey_id, resultRow(row));
      const rows = [...current.values()].sort((a, b) => a.position - b.position);
      const aggregate = aggregateRunStatus(rows.map((r) => r.status));
      // A final run never reopens (its lock is gone and may already belong to the next run): it
      // follows its journeys only to another final status, e.g. passed → failed.
      const status = isFinalRun(run.status) && !isFinalRun(aggregate) ? run.status : aggregate;
      const final = isFinalRun(status);
      if (status !== run.status || final !== (run.finished_at !== null)) {
        await tx`
          update e2e_runs set status = ${status},
            finished_at = case when ${final} then coalesce(finished_at, now()) else null end, updated_at = now()
          where id = ${runId}`;
        if (final && !isFinalRun(run.status)) {
          await tx`
            with released as (delete from e2e_environment_locks where run_id = ${runId} returning 1)
            select pg_notify(${LOCK_CHANNEL}, ${run.environment_label})`;
        }
      }
      return rows.map(resultView);
    });
  } catch (error) {
    if (error instanceof AppError) throw error;
    logger.error({ err: error, runId }, "E2E results could not be stored");
    throw new AppError(422, "database_error", "Failed to update results.");
  }
}

// ---------------------------------------------------------------- cancel

/** Cancels a run that is not final (its open journeys too) and releases its lock; a final run is returned as is. */
export async function cancelRun(database: Database, logger: Logger, runId: string): Promise<RunView> {
  if (!isRunId(runId)) throw runNotFound();
  try {
    return await database.sql.begin(async (tx) => {
      const [run] = await tx.unsafe<RunRow[]>(
        `select ${RUN_COLUMNS} from e2e_runs where id = $1 for update`,
        [runId],
      );
      if (!run) throw runNotFound();
      if (isFinalRun(run.status)) return runView(runRow(run));
      await tx`
        update e2e_run_results set status = 'cancelled', finished_at = now(), updated_at = now(),
          duration_ms = coalesce(duration_ms, case when started_at is null then null
            else (extract(epoch from now() - started_at) * 1000)::bigint end)
        where run_id = ${runId} and status in ('queued', 'running')`;
      const [updated] = await tx.unsafe<RunRow[]>(
        `update e2e_runs set status = 'cancelled', finished_at = now(), updated_at = now() where id = $1 returning ${RUN_COLUMNS}`,
        [runId],
      );
      await tx`delete from e2e_environment_locks where run_id = ${runId}`;
      await tx`select pg_notify(${LOCK_CHANNEL}, ${run.environment_label})`;
      logger.info({ runId }, "E2E run cancelled");
      return runView(runRow(updated!));
    });
  } catch (error) {
    if (error instanceof AppError) throw error;
    logger.error({ err: error, runId }, "E2E run could not be cancelled");
    throw new AppError(422, "database_error", "Failed to cancel run.");
  }
}

// ---------------------------------------------------------------- logs

export function logRefFor(runId: string, journeyId: string): string {
  return `/e2e/runs/${runId}/results/${encodeURIComponent(journeyId)}/log`;
}

async function requireResult(sql: Sql, runId: string, journeyId: string): Promise<ResultRow> {
  if (!isRunId(runId)) throw runNotFound();
  const [run] = await sql`select 1 from e2e_runs where id = ${runId}`;
  if (!run) throw runNotFound();
  const [result] = await sql.unsafe<ResultRow[]>(
    `select ${RESULT_COLUMNS} from e2e_run_results where run_id = $1 and journey_id = $2`,
    [runId, journeyId],
  );
  if (!result) throw new AppError(404, "not_found", `Run ${runId} has no journey '${journeyId}'.`);
  return result;
}

/** Stores a journey's JSONL log (replacing an earlier upload) and points the result's log_ref at it. */
export async function storeLog(database: Database, runId: string, journeyId: string, content: string) {
  await requireResult(database.sql, runId, journeyId);
  const bytes = Buffer.byteLength(content);
  const logRef = logRefFor(runId, journeyId);
  await database.sql.begin(async (tx) => {
    await tx`
      insert into e2e_journey_logs (run_id, journey_id, content, bytes)
      values (${runId}, ${journeyId}, ${content}, ${bytes})
      on conflict (run_id, journey_id) do update
        set content = excluded.content, bytes = excluded.bytes, uploaded_at = now(), pruned_at = null`;
    await tx`update e2e_run_results set log_ref = ${logRef}, updated_at = now() where run_id = ${runId} and journey_id = ${journeyId}`;
  });
  return { run_id: runId, journey_id: journeyId, log_ref: logRef, bytes };
}

/** GET …/log: 404 unknown run/result or never a log; 410 pruned or content missing. */
export async function readLog(database: Database, runId: string, journeyId: string) {
  const result = await requireResult(database.sql, runId, journeyId);
  const [log] = await database.sql<{ content: string | null; pruned_at: Date | string | null }[]>`
    select content, pruned_at from e2e_journey_logs where run_id = ${runId} and journey_id = ${journeyId}`;
  if (!log) {
    if (!result.log_ref)
      throw new AppError(404, "not_found", `Journey '${journeyId}' of run ${runId} has no log.`);
    throw new AppError(410, "log_unavailable", "Log is unavailable: its content is missing.", {
      log_ref: result.log_ref,
    });
  }
  if (log.content === null) {
    throw new AppError(410, "log_unavailable", "Log is unavailable: it was pruned by the retention policy.", {
      pruned_at: toDate(log.pruned_at)?.toISOString() ?? null,
    });
  }
  return { run_id: runId, journey_id: journeyId, content: log.content };
}

// ---------------------------------------------------------------- delete, retention, stale runs

/** Deletes runs with their results and logs; a deleted active run's lock goes with it. */
export async function deleteRuns(database: Database, logger: Logger, ids: string[]): Promise<number> {
  const valid = ids.filter(isRunId);
  if (valid.length === 0) return 0;
  const deleted = await database.sql.begin(async (tx) => {
    const rows = await tx<{ environment_label: string }[]>`
      delete from e2e_runs where id = any(${valid}::uuid[]) returning environment_label`;
    for (const env of new Set(rows.map((r) => r.environment_label)))
      await tx`select pg_notify(${LOCK_CHANNEL}, ${env})`;
    return rows.length;
  });
  logger.info({ count: deleted }, "E2E runs deleted");
  return deleted;
}

export interface RetentionOutcome {
  runsDeleted: number;
  logsPruned: number;
  bytesPruned: number;
  seedRunsDeleted: number;
}

/**
 * Retention, never touching an active run: deletes runs older than `days`, then the oldest runs
 * beyond `maxRuns`, then discards the oldest log contents until stored logs fit `maxLogBytes`
 * (those logs answer 410 afterwards).
 */
export async function pruneRetention(database: Database, e2e: E2EConfig): Promise<RetentionOutcome> {
  const { days, maxRuns, maxLogBytes } = e2e.retention;
  return database.sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(7401501)`; // one pruner at a time across workers
    const byAge = await tx`
      delete from e2e_runs where status not in ('queued', 'running') and started_at < now() - make_interval(days => ${days})`;
    const byCount = await tx`
      delete from e2e_runs where id in (
        select id from e2e_runs where status not in ('queued', 'running')
        order by started_at asc, id asc
        limit greatest((select count(*) from e2e_runs) - ${maxRuns}, 0))`;
    const pruned = await tx<{ bytes: number }[]>`
      update e2e_journey_logs l set content = null, pruned_at = now()
      from (
        select run_id, journey_id, active,
          sum(bytes) over (order by uploaded_at desc, run_id desc, journey_id desc) as cumulative
        from (
          select l2.run_id, l2.journey_id, l2.bytes, l2.uploaded_at, r.status in ('queued', 'running') as active
          from e2e_journey_logs l2 join e2e_runs r on r.id = l2.run_id
          where l2.content is not null
        ) s
      ) ranked
      where l.run_id = ranked.run_id and l.journey_id = ranked.journey_id
        and ranked.cumulative > ${maxLogBytes} and not ranked.active
      returning l.bytes`;
    const seeds =
      await tx`delete from e2e_seed_runs where created_at < now() - make_interval(days => ${days})`;
    return {
      runsDeleted: byAge.count + byCount.count,
      logsPruned: pruned.length,
      bytesPruned: pruned.reduce((sum, row) => sum + Number(row.bytes), 0),
      seedRunsDeleted: seeds.count,
    };
  });
}

/** Cancels runs still active after run_timeout_s and drops locks nobody holds any more. */
export async function cancelStaleRuns(database: Database, e2e: E2EConfig, logger: Logger) {
  const stale = await database.sql<{ id: string }[]>`
    select id::text as id from e2e_runs
    where status in ('queued', 'running') and started_at < now() - make_interval(secs => ${e2e.runTimeoutS})`;
  for (const run of stale) await cancelRun(database, logger, run.id);
  const locks = await clearStaleLocks(database.sql, e2e);
  return { runsCancelled: stale.length, locksCleared: locks };
}

// ---------------------------------------------------------------- runs page

export const PAGE_SORTS = [
  "started_at",
  "finished_at",
  "suite_id",
  "environment_label",
  "status",
  "trigger_source",
] as const;
export type PageSort = (typeof PAGE_SORTS)[number];

export interface RunsPageQuery {
  status?: string;
  suite?: string;
  environment?: string;
  trigger?: string;
  q?: string;
  sort: PageSort;
  dir: "asc" | "desc";
  page: number;
  perPage: number;
}

export interface RunsPageRow extends RunRow {
  journeys_total: number;
  journeys_passed: number;
  journeys_failed: number;
}

/** Runs for the operators' page: filters, search (id, suite, environment, runner, status), sort, pages. */
export async function listRunsPage(
  database: Database,
  query: RunsPageQuery,
): Promise<{ rows: RunsPageRow[]; total: number }> {
  const sort = (PAGE_SORTS as readonly string[]).includes(query.sort) ? query.sort : "started_at";
  const dir = query.dir === "asc" ? "asc" : "desc";
  const search = query.q?.trim() ? `%${query.q.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const where = `($1::text is null or r.status = $1) and ($2::text is null or r.suite_id = $2)
    and ($3::text is null or r.environment_label = $3) and ($4::text is null or r.trigger_source = $4)
    and ($5::text is null or r.id::text ilike $5 or r.suite_id ilike $5 or r.environment_label ilike $5
      or r.runner_id ilike $5 or r.status ilike $5 or array_to_string(r.journey_ids, ' ') ilike $5)`;
  const params = [
    query.status || null,
    query.suite || null,
    query.environment || null,
    query.trigger || null,
    search,
  ];
  const offset = (Math.max(query.page, 1) - 1) * query.perPage;
  const [rows, counted] = await Promise.all([
    database.sql.unsafe<RunsPageRow[]>(
      `select ${RUN_COLUMNS.replace(/(^|,\s*)(\w+)/g, "$1r.$2")},
         (select count(*)::int from e2e_run_results x where x.run_id = r.id) as journeys_total,
         (select count(*)::int from e2e_run_results x where x.run_id = r.id and x.status = 'passed') as journeys_passed,
         (select count(*)::int from e2e_run_results x where x.run_id = r.id and x.status = 'failed') as journeys_failed
       from e2e_runs r where ${where}
       order by r.${sort} ${dir} nulls last, r.id ${dir} limit ${query.perPage} offset ${offset}`,
      params,
    ),
    database.sql.unsafe<{ total: number }[]>(
      `select count(*)::int as total from e2e_runs r where ${where}`,
      params,
    ),
  ]);
  return { rows: rows.map(runRow), total: counted[0]?.total ?? 0 };
}

export interface JourneyLogLine {
  kind: "journey" | "step" | "invalid";
  raw: string;
  entry?: Record<string, unknown>;
  problem?: string;
}

/**
 * Parses e2e_log.v1 JSONL for display, secrets redacted whoever wrote the log (viewers see it);
 * lines that are not the v1 schema are shown as problems.
 */
export function parseJourneyLog(content: string): JourneyLogLine[] {
  return content
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((raw) => {
      let entry: unknown;
      try {
        entry = JSON.parse(raw);
      } catch {
        return {
          kind: "invalid",
          raw: redactText(raw),
          problem: "Not JSON (expected e2e_log.v1)",
        } satisfies JourneyLogLine;
      }
      if (!isObject(entry))
        return {
          kind: "invalid",
          raw: redactText(raw),
          problem: "Not a JSON object",
        } satisfies JourneyLogLine;
      if (entry.schema !== "e2e_log.v1") {
        return {
          kind: "invalid",
          raw: redactText(raw),
          problem:
            entry.schema === undefined ? "Missing schema" : `Unsupported log schema: ${String(entry.schema)}`,
        } satisfies JourneyLogLine;
      }
      return {
        kind: entry.level === "step" ? "step" : "journey",
        raw: redactText(raw),
        entry: redact(entry) as Record<string, unknown>,
      } satisfies JourneyLogLine;
    });
}
