import { type TSchema, Type } from "@sinclair/typebox";
import type { Clock } from "../../shared/clock";
import { allDocument } from "../jsonapi/model";
import type { Database } from "../platform/database";

/**
 * Journey health: how each journey fared over the latest finished runs of its suite in one
 * environment — pass rate, a flaky verdict, and the outcomes and durations behind them.
 */

/** How many finished runs of a suite and environment the health looks back over. */
export const HEALTH_RUNS = 20;
/** Runs without a commit: an outcome that flips and flips back within this time is flaky. */
export const FLAKY_WINDOW_MS = 24 * 3600_000;

/** A fixed SQL list (no input), inlined as literals like the statements always had them. */
const FINAL_RUN = "('passed', 'failed', 'blocked', 'cancelled')";

export interface JourneyOutcome {
  run_id: string;
  status: string;
  duration_ms: number | null;
  commit: string | null;
  started_at: Date;
}

export interface JourneyHealth {
  suite_id: string;
  environment_label: string;
  journey_id: string;
  /** Runs of the window this journey was part of. */
  runs: number;
  passed: number;
  failed: number;
  /** passed / (passed + failed), null when it never passed or failed in the window. */
  pass_rate: number | null;
  flaky: boolean;
  flaky_reason: string | null;
  last_status: string;
  /** Newest first. */
  history: JourneyOutcome[];
}

export interface SuiteEnvironment {
  suite_id: string;
  environment_label: string;
}

const decided = (o: JourneyOutcome) => o.status === "passed" || o.status === "failed";

/** Why the outcomes (newest first) look flaky, or null: see docs/e2e.md "Journey health". */
export function flakyReason(history: JourneyOutcome[]): string | null {
  const byCommit = new Map<string, Set<string>>();
  for (const outcome of history.filter(decided)) {
    if (!outcome.commit) continue;
    const statuses = byCommit.get(outcome.commit) ?? new Set();
    statuses.add(outcome.status);
    byCommit.set(outcome.commit, statuses);
  }
  for (const [commit, statuses] of byCommit)
    if (statuses.size === 2) return `passed and failed on commit ${commit.slice(0, 12)}`;
  // Without a commit a single change is a break or a fix; a change and back again within the
  // window is flakiness.
  const unattributed = history.filter((o) => decided(o) && !o.commit).reverse();
  for (let i = 0; i + 2 < unattributed.length; i++) {
    const [a, b] = [unattributed[i]!, unattributed[i + 1]!];
    if (a.status === b.status) continue;
    const back = unattributed.slice(i + 2).find((o) => o.status === a.status);
    if (back && back.started_at.getTime() - a.started_at.getTime() <= FLAKY_WINDOW_MS)
      return `passed and failed back and forth within ${FLAKY_WINDOW_MS / 3600_000} h`;
  }
  return null;
}

export function assessJourney(
  key: SuiteEnvironment & { journey_id: string },
  history: JourneyOutcome[],
): JourneyHealth {
  const passed = history.filter((o) => o.status === "passed").length;
  const failed = history.filter((o) => o.status === "failed").length;
  const reason = flakyReason(history);
  return {
    ...key,
    runs: history.length,
    passed,
    failed,
    pass_rate: passed + failed === 0 ? null : passed / (passed + failed),
    flaky: reason !== null,
    flaky_reason: reason,
    last_status: history[0]?.status ?? "queued",
    history,
  };
}

const CACHED_PAIRS = 1000;
/**
 * A result corrected on a finished run leaves the run's row (and so the version) alone; the
 * health catches up with it after this long.
 */
export const HEALTH_REUSE_MS = 60_000;

/**
 * Journey health for one process (built once by createServices): each pair's health with the version
 * of its window of runs it was computed from.
 */
export class JourneyHealthCache {
  private readonly known = new Map<string, { version: string; at: number; health: JourneyHealth[] }>();

  constructor(
    private readonly database: Database,
    private readonly clock: Clock,
  ) {}

  /**
   * Health of every journey of the given suite/environment pairs over their latest `runs` finished
   * runs, in the order of `pairs` and then of the suite. A pair is recomputed when its window changed
   * (a run finished, changed status or was deleted: the ids and `updated_at` of the window's runs, read
   * from the (suite, environment, started_at) index) or HEALTH_REUSE_MS passed; else it is reused.
   */
  async get(pairs: SuiteEnvironment[], runs = HEALTH_RUNS): Promise<JourneyHealth[]> {
    if (pairs.length === 0) return [];
    const { database, known } = this;
    const key = (p: SuiteEnvironment) => JSON.stringify([p.suite_id, p.environment_label, runs]);
    const versions = await windowVersions(database, pairs, runs);
    const now = this.clock.now();
    const stale = pairs.filter((p, i) => {
      const hit = known.get(key(p));
      return versions[i] !== undefined && (hit?.version !== versions[i] || now - hit.at > HEALTH_REUSE_MS);
    });
    const fresh = await computeHealth(database, stale, runs);
    for (const [i, pair] of pairs.entries()) {
      const version = versions[i];
      if (version === undefined || !stale.includes(pair)) continue;
      known.delete(key(pair));
      known.set(key(pair), {
        version,
        at: now,
        health: fresh.filter(
          (h) => h.suite_id === pair.suite_id && h.environment_label === pair.environment_label,
        ),
      });
      if (known.size > CACHED_PAIRS) known.delete(known.keys().next().value!);
    }
    return pairs.flatMap((p, i) => (versions[i] === undefined ? [] : (known.get(key(p))?.health ?? [])));
  }
}

/** Each pair's window of finished runs as a version string; undefined for a pair without one. */
async function windowVersions(database: Database, pairs: SuiteEnvironment[], runs: number) {
  const sql = database.sql;
  const rows = await sql<{ n: number; version: string }[]>`
    select p.n::int as n,
       md5(string_agg(r.id::text || '@' || r.updated_at::text, ',' order by r.started_at desc, r.id)) as version
     from unnest(${pairs.map((p) => p.suite_id)}::text[], ${pairs.map((p) => p.environment_label)}::text[])
       with ordinality as p(suite_id, environment_label, n)
     cross join lateral (
       select id, started_at, updated_at from e2e_runs
       where suite_id = p.suite_id and environment_label = p.environment_label and status in ${sql.unsafe(FINAL_RUN)}
       order by started_at desc limit ${runs}
     ) r
     group by p.n`;
  const versions: (string | undefined)[] = pairs.map(() => undefined);
  for (const row of rows) versions[row.n - 1] = row.version;
  return versions;
}

/** The pairs' health from their runs and results (what the cache holds). */
async function computeHealth(
  database: Database,
  pairs: SuiteEnvironment[],
  runs: number,
): Promise<JourneyHealth[]> {
  if (pairs.length === 0) return [];
  // One row per journey with its outcomes as one JSON text: thousands of small rows cost more to
  // transfer and decode than the query takes.
  const sql = database.sql;
  const rows = await sql<(SuiteEnvironment & { journey_id: string; outcomes: string })[]>`
    select p.suite_id, p.environment_label, x.journey_id,
       json_agg(json_build_array(r.id, x.status, x.duration_ms, r.commit, r.started_at)
         order by r.started_at desc, r.id)::text as outcomes
     from unnest(${pairs.map((p) => p.suite_id)}::text[], ${pairs.map((p) => p.environment_label)}::text[])
       with ordinality as p(suite_id, environment_label, n)
     cross join lateral (
       select id, started_at, left(metadata->>'commit', 64) as commit from e2e_runs
       where suite_id = p.suite_id and environment_label = p.environment_label and status in ${sql.unsafe(FINAL_RUN)}
       order by started_at desc limit ${runs}
     ) r
     join e2e_run_results x on x.run_id = r.id
     group by p.n, p.suite_id, p.environment_label, x.journey_id
     order by p.n, min(x.position), x.journey_id`;
  return rows.map((row) => {
    const outcomes = JSON.parse(row.outcomes) as [string, string, number | null, string | null, string][];
    return assessJourney(
      { suite_id: row.suite_id, environment_label: row.environment_label, journey_id: row.journey_id },
      outcomes.map(([run_id, status, duration_ms, commit, started_at]) => ({
        run_id,
        status,
        duration_ms,
        commit,
        started_at: new Date(started_at),
      })),
    );
  });
}

export function journeyHealthJson(health: JourneyHealth) {
  return {
    ...health,
    history: health.history.map((o) => ({ ...o, started_at: o.started_at.toISOString() })),
  };
}

/** `GET /api/json/e2e_journey_health`: narrowed by suite and environment, or to the flaky ones. */
export const JourneyHealthQuery = Type.Object(
  {
    "filter[suite_id]": Type.Optional(Type.String({ description: "One suite" })),
    "filter[environment_label]": Type.Optional(Type.String({ description: "One environment" })),
    "filter[flaky]": Type.Optional(
      Type.Union([Type.Literal("true"), Type.Literal("false")], { message: "must be true or false" }),
    ),
  },
  { additionalProperties: true },
);

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** The journey health document (`journeyHealthJson` as attributes; id `suite/environment/journey`). */
export const JourneyHealthDocument = allDocument(
  Type.Object({
    type: Type.Literal("e2e_journey_health"),
    id: Type.String({ description: "suite_id/environment_label/journey_id" }),
    attributes: Type.Object({
      suite_id: Type.String(),
      environment_label: Type.String(),
      journey_id: Type.String(),
      runs: Type.Integer(),
      passed: Type.Integer(),
      failed: Type.Integer(),
      pass_rate: Nullable(Type.Number()),
      flaky: Type.Boolean(),
      flaky_reason: Nullable(Type.String()),
      last_status: Type.String(),
      history: Type.Array(
        Type.Object({
          run_id: Type.String(),
          status: Type.String(),
          duration_ms: Nullable(Type.Integer()),
          commit: Nullable(Type.String()),
          started_at: Type.String({ format: "date-time" }),
        }),
      ),
    }),
  }),
  Type.Object({ runs_window: Type.Integer() }),
);
