// What a device posts back (`command_results`): each entry gets its own outcome, so one bad entry
// never costs the others. Results for a command go on its row; results for no command (no id, an id
// never sent to this device, an id repeated in the post) are kept apart for operators to see.
import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { commandsTotal } from "../platform/metrics";
import { commandResult } from "./model";

export const RESULTS_MAX_ITEMS = 500;
const ERROR_MAX = 16_384;
const COMMAND_ID_MAX = 200;

export interface CommandResultInput {
  command_id: string;
  status: "OK" | "FAILED";
  output?: unknown;
  error?: string;
}

export type UnmatchedReason = "missing_command_id" | "unknown_command" | "duplicate_command_id";

/** One entry's outcome, in the reply's `results[]` (same order as posted). */
export type EntryOutcome =
  /** Stored on its command (delivered → succeeded/failed). */
  | { index: number; command_id: string; outcome: "recorded" }
  /** Stored as a result for no command (shown on the device page). */
  | { index: number; command_id: string; outcome: "recorded_without_command"; reason: UnmatchedReason }
  /** Its command already has a result (a retried post): nothing changes. */
  | { index: number; command_id: string; outcome: "ignored"; reason: "already_recorded" }
  /** Malformed: not stored. */
  | { index: number; command_id: string | null; outcome: "invalid"; reason: string };

const PROBLEMS: [field: string, problem: string][] = [
  ["command_id", "command_id must be a string"],
  ["status", "status must be OK or FAILED"],
  ["error", "error must be a string"],
];

/** An entry's problem, or undefined when it is well-formed. `command_id` may be missing or empty. */
function problemOf(item: unknown): string | undefined {
  if (commandResult.Check(item)) return undefined;
  if (typeof item !== "object" || item === null || Array.isArray(item)) return "must be an object";
  const paths = [...commandResult.Errors(item)].map((e) => e.path.split("/")[1]);
  return PROBLEMS.find(([field]) => paths.includes(field))?.[1] ?? "is malformed";
}

/**
 * Records a post's results, each on its own (one transaction). An entry without an id, with an id this
 * device was never sent, or repeating an id earlier in the post is kept as a result for no command;
 * a result for a command that already has one (a retried post) changes nothing; a malformed entry is
 * refused alone. 422 `invalid_results` only when no entry is well-formed (nothing is stored then).
 */
export async function recordCommandResults(
  sql: Sql,
  deviceId: string,
  items: unknown[],
): Promise<{ acknowledged: number; results: EntryOutcome[] }> {
  if (items.length > RESULTS_MAX_ITEMS) {
    throw new AppError(422, "invalid_results", `At most ${RESULTS_MAX_ITEMS} results per request`, {
      max_items: RESULTS_MAX_ITEMS,
    });
  }
  const outcomes: EntryOutcome[] = [];
  const valid: { index: number; id: string; result: CommandResultInput }[] = [];
  items.forEach((item, index) => {
    const problem = problemOf(item);
    const rawId = (item as { command_id?: unknown } | null)?.command_id;
    if (problem) {
      outcomes[index] = {
        index,
        command_id: typeof rawId === "string" ? rawId.slice(0, COMMAND_ID_MAX) : null,
        outcome: "invalid",
        reason: `results[${index}].${problem}`,
      };
      return;
    }
    const result = item as CommandResultInput & { error?: string | null };
    valid.push({
      index,
      id: (result.command_id ?? "").trim().slice(0, COMMAND_ID_MAX),
      result: {
        command_id: result.command_id ?? "",
        status: result.status,
        output: result.output ?? undefined,
        error: typeof result.error === "string" ? result.error.slice(0, ERROR_MAX) : undefined,
      },
    });
  });
  if (items.length > 0 && valid.length === 0) {
    const first = outcomes[0] as Extract<EntryOutcome, { outcome: "invalid" }>;
    throw new AppError(422, "invalid_results", first.reason, { index: 0, results: outcomes });
  }

  const seen = new Set<string>();
  const forCommands: { index: number; id: string; result: CommandResultInput }[] = [];
  const unmatched: { index: number; id: string; reason: UnmatchedReason; result: CommandResultInput }[] = [];
  for (const entry of valid) {
    const key = entry.id.toLowerCase();
    if (key === "") unmatched.push({ ...entry, reason: "missing_command_id" });
    else if (seen.has(key)) unmatched.push({ ...entry, reason: "duplicate_command_id" });
    else if (!isUuid(key)) unmatched.push({ ...entry, reason: "unknown_command" });
    else forCommands.push({ ...entry, id: key });
    seen.add(key);
  }

  await sql.begin(async (tx) => {
    const updated = new Set<string>();
    const existing = new Set<string>();
    if (forCommands.length > 0) {
      const rows = forCommands.map(({ id, result }) => ({
        command_id: id,
        status: result.status === "OK" ? "succeeded" : "failed",
        output: result.output ?? null,
        error: result.error ?? null,
      }));
      const done = await tx<{ id: string; status: "succeeded" | "failed" }[]>`
        update pending_commands c
        set status = r.status::command_status, output = r.output, error = r.error, completed_at = now()
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(command_id uuid, status text, output jsonb, error text)
        where c.id = r.command_id and c.device_id = ${deviceId}::uuid and c.status = 'delivered'
        returning c.id::text as id, c.status::text as status`;
      for (const row of done) {
        updated.add(row.id);
        commandsTotal.inc({ event: row.status });
      }
      const rest = forCommands.map((e) => e.id).filter((id) => !updated.has(id));
      if (rest.length > 0) {
        const found = await tx<{ id: string }[]>`
          select id::text as id from pending_commands
          where device_id = ${deviceId}::uuid and id = any(${rest}::uuid[])`;
        for (const row of found) existing.add(row.id);
      }
    }
    for (const entry of forCommands) {
      if (updated.has(entry.id))
        outcomes[entry.index] = { index: entry.index, command_id: entry.id, outcome: "recorded" };
      else if (existing.has(entry.id))
        outcomes[entry.index] = {
          index: entry.index,
          command_id: entry.id,
          outcome: "ignored",
          reason: "already_recorded",
        };
      else unmatched.push({ ...entry, reason: "unknown_command" });
    }
    if (unmatched.length > 0) {
      const rows = unmatched.map(({ id, reason, result }) => ({
        command_id: id,
        reason,
        status: result.status,
        output: result.output ?? null,
        error: result.error ?? null,
      }));
      await tx`
        insert into unmatched_command_results (device_id, command_id, reason, status, output, error)
        select ${deviceId}::uuid, r.command_id, r.reason, r.status, r.output, r.error
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
          as r(command_id text, reason text, status text, output jsonb, error text)`;
      commandsTotal.inc({ event: "unmatched_result" }, unmatched.length);
      for (const entry of unmatched)
        outcomes[entry.index] = {
          index: entry.index,
          command_id: entry.id,
          outcome: "recorded_without_command",
          reason: entry.reason,
        };
    }
  });
  return { acknowledged: outcomes.filter((o) => o.outcome === "recorded").length, results: outcomes };
}

export interface UnmatchedResult {
  id: string;
  commandId: string;
  reason: UnmatchedReason;
  status: "OK" | "FAILED";
  output: unknown;
  error: string | null;
  receivedAt: Date;
}

/** A device's results for no command, newest first, and how many it has in all. */
export async function listUnmatchedResults(
  sql: Sql,
  deviceId: string,
  limit = 20,
): Promise<{ results: UnmatchedResult[]; total: number }> {
  if (!isUuid(deviceId)) return { results: [], total: 0 };
  const rows = await sql<
    {
      id: string;
      command_id: string;
      reason: UnmatchedReason;
      status: "OK" | "FAILED";
      output: unknown;
      error: string | null;
      received_at: Date;
      total: number;
    }[]
  >`
    select id, command_id, reason, status, output, error, received_at, count(*) over ()::int as total
    from unmatched_command_results where device_id = ${deviceId}::uuid
    order by received_at desc, id desc limit ${limit}`;
  return {
    total: rows[0]?.total ?? 0,
    results: rows.map((row) => ({
      id: row.id,
      commandId: row.command_id,
      reason: row.reason,
      status: row.status,
      output: row.output,
      error: row.error,
      receivedAt: row.received_at,
    })),
  };
}

/** Deletes results for no command received more than `days` ago; returns how many. */
export async function pruneUnmatchedResults(sql: Sql, days: number): Promise<number> {
  const deleted = await sql`delete from unmatched_command_results
    where received_at < now() - make_interval(days => ${days})`;
  return deleted.count;
}
