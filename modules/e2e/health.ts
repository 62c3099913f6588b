import type { Database } from "../platform/database";

/**
 * Journey health: how each journey fared over the latest finished runs of its suite in one
 * environment — pass rate, a flaky verdict, and the outcomes and durations behind them.
 */

/** How many finished runs of a suite and environment the health looks back over. */
export const HEALTH_RUNS = 20;
/** Runs without a commit: an outcome that flips and flips back within this time is flaky. */
export const FLAKY_WINDOW_MS = 24 * 3600_000;

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

/**
 * Health of every journey of the given suite/environment pairs over their latest `runs` finished
 * runs (one index range per pair: e2e_runs_suite_environment_started_idx), in suite order.
 */
export async function journeyHealth(
  database: Database,
  pairs: SuiteEnvironment[],
  runs = HEALTH_RUNS,
): Promise<JourneyHealth[]> {
  if (pairs.length === 0) return [];
  const rows = await database.sql.unsafe<
    (JourneyOutcome & SuiteEnvironment & { journey_id: string; position: number })[]
  >(
    `select p.suite_id, p.environment_label, r.id::text as run_id, r.started_at, r.commit,
       x.journey_id, x.position, x.status, x.duration_ms::float8 as duration_ms
     from unnest($1::text[], $2::text[]) as p(suite_id, environment_label)
     cross join lateral (
       select id, started_at, left(metadata->>'commit', 64) as commit from e2e_runs
       where suite_id = p.suite_id and environment_label = p.environment_label and status in ${FINAL_RUN}
       order by started_at desc limit $3
     ) r
     join e2e_run_results x on x.run_id = r.id
     order by p.suite_id, p.environment_label, r.started_at desc, r.id`,
    [pairs.map((p) => p.suite_id), pairs.map((p) => p.environment_label), runs],
  );
  const groups = new Map<
    string,
    { key: SuiteEnvironment & { journey_id: string }; position: number; history: JourneyOutcome[] }
  >();
  for (const row of rows) {
    const id = JSON.stringify([row.suite_id, row.environment_label, row.journey_id]);
    let group = groups.get(id);
    if (!group) {
      group = {
        key: { suite_id: row.suite_id, environment_label: row.environment_label, journey_id: row.journey_id },
        position: row.position,
        history: [],
      };
      groups.set(id, group);
    }
    group.history.push({
      run_id: row.run_id,
      status: row.status,
      duration_ms: row.duration_ms,
      commit: row.commit,
      started_at: new Date(row.started_at),
    });
  }
  return [...groups.values()]
    .sort(
      (a, b) =>
        a.key.suite_id.localeCompare(b.key.suite_id) ||
        a.key.environment_label.localeCompare(b.key.environment_label) ||
        a.position - b.position,
    )
    .map((g) => assessJourney(g.key, g.history));
}

export function journeyHealthJson(health: JourneyHealth) {
  return {
    ...health,
    history: health.history.map((o) => ({ ...o, started_at: o.started_at.toISOString() })),
  };
}
