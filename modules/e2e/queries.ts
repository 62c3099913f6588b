import type { PendingQuery, Row } from "postgres";
import type { Database, Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import type { E2EConfig } from "./config";
import { journeyHealth, type SuiteEnvironment } from "./health";
import { journeyDescription } from "./journeys";
import { parseJourneyLog, readLog } from "./logs";
import type { E2EPageQuery, RunRow } from "./model";
import type { E2EPageData } from "./pages/common";
import { findRun, listResultRows, RUN_COLUMNS } from "./runs";
import { RUN_STATUSES } from "./schema";

const PER_PAGE = 25;

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

type Fragment = PendingQuery<Row[]>;

/**
 * The page's filters and search as a condition on `e2e_runs r`: only the filters given, so the planner
 * sees plain conditions (an `$1 is null or …` generic plan scans them all).
 */
function runsWhere(sql: Sql, query: RunsPageQuery): Fragment {
  const conditions: Fragment[] = [];
  if (query.status) conditions.push(sql`r.status = ${query.status}`);
  if (query.suite) conditions.push(sql`r.suite_id = ${query.suite}`);
  if (query.environment) conditions.push(sql`r.environment_label = ${query.environment}`);
  if (query.trigger) conditions.push(sql`r.trigger_source = ${query.trigger}`);
  if (query.q?.trim()) {
    const search = `%${query.q.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    conditions.push(sql`(r.id::text ilike ${search} or r.suite_id ilike ${search} or r.environment_label ilike ${search}
      or r.runner_id ilike ${search} or r.status ilike ${search} or array_to_string(r.journey_ids, ' ') ilike ${search})`);
  }
  return conditions.reduce((all, condition) => sql`${all} and ${condition}`, sql`true`);
}

/** A run's columns with its journey counts, from `e2e_runs r` (a fixed text, no input). */
const PAGE_COLUMNS = `${RUN_COLUMNS.replace(/(^|,\s*)(\w+)/g, "$1r.$2")},
  (select count(*)::int from e2e_run_results x where x.run_id = r.id) as journeys_total,
  (select count(*)::int from e2e_run_results x where x.run_id = r.id and x.status = 'passed') as journeys_passed,
  (select count(*)::int from e2e_run_results x where x.run_id = r.id and x.status = 'failed') as journeys_failed`;

/** The sort column and direction come from fixed lists, never from the request as given. */
function sortOf(sql: Sql, query: RunsPageQuery) {
  const sort = (PAGE_SORTS as readonly string[]).includes(query.sort) ? query.sort : "started_at";
  const dir = query.dir === "asc" ? "asc" : "desc";
  // Only finished_at may be null; the others keep an order an index can give.
  const nulls = sort === "finished_at" ? " nulls last" : "";
  return { sort, dir, orderBy: sql.unsafe(`r.${sort} ${dir}${nulls}, r.id ${dir}`) };
}

/** Runs for the operators' page: filters, search (id, suite, environment, runner, status), sort, pages. */
export async function listRunsPage(
  database: Database,
  query: RunsPageQuery,
): Promise<{ rows: RunsPageRow[]; total: number }> {
  const sql = database.sql;
  const where = runsWhere(sql, query);
  const { orderBy } = sortOf(sql, query);
  const offset = (Math.max(query.page, 1) - 1) * query.perPage;
  // The page's ids first, then their columns and counts: a deep page counts no journeys of the runs it skips.
  const [rows, counted] = await Promise.all([
    sql<RunsPageRow[]>`
      select ${sql.unsafe(PAGE_COLUMNS)} from (select r.id from e2e_runs r where ${where}
        order by ${orderBy} limit ${query.perPage} offset ${offset}) page
      join e2e_runs r on r.id = page.id order by ${orderBy}`,
    sql<{ total: number }[]>`select count(*)::int as total from e2e_runs r where ${where}`,
  ]);
  return { rows, total: counted[0]?.total ?? 0 };
}

/** Where a walk over every matching run stands: the last run's sort value (as text) and id. */
export type RunsCursor = { value: string | null; id: string };

/**
 * The runs after `cursor` in the page's filters and order (nulls last in either direction), by
 * keyset, for the CSV of every matching run; `next` is undefined after the last one.
 */
export async function runsAfter(
  database: Database,
  query: RunsPageQuery,
  cursor: RunsCursor | undefined,
  limit: number,
): Promise<{ rows: RunsPageRow[]; next: RunsCursor | undefined }> {
  const sql = database.sql;
  const { sort, dir, orderBy } = sortOf(sql, query);
  const column = sql.unsafe(`r.${sort}`);
  const op = sql.unsafe(dir === "asc" ? ">" : "<");
  const cast = sql.unsafe(sort === "started_at" || sort === "finished_at" ? "timestamptz" : "text");
  // Non-null values come first, then the nulls (ordered by id alone).
  const bound = !cursor
    ? sql``
    : cursor.value === null
      ? sql`and ${column} is null and r.id ${op} ${cursor.id}::uuid`
      : sql`and ((${column}, r.id) ${op} (${cursor.value}::${cast}, ${cursor.id}::uuid) or ${column} is null)`;
  const rows = await sql<(RunsPageRow & { sort_value: string | null })[]>`
    select ${sql.unsafe(PAGE_COLUMNS)}, ${column}::text as sort_value from e2e_runs r
    where ${runsWhere(sql, query)} ${bound} order by ${orderBy} limit ${limit}`;
  const last = rows[rows.length - 1];
  return {
    rows,
    next: last && rows.length === limit ? { value: last.sort_value, id: last.id } : undefined,
  };
}

/** The runs page query, read leniently in the handler (after enablement): bad values fall back to defaults. */
export function parsePageQuery(query: E2EPageQuery) {
  const page = Number(query.page ?? "1");
  return {
    status: query.status,
    suite: query.suite,
    environment: query.environment,
    trigger: query.trigger,
    q: query.q,
    sort: query.sort,
    dir: query.dir,
    page: Number.isInteger(page) && page >= 1 ? page : 1,
    run: query.run,
    journey: query.journey,
    history: query.history,
    fragment: query.fragment === "runs" || query.fragment === "detail" ? query.fragment : undefined,
  };
}
export type PageQuery = ReturnType<typeof parsePageQuery>;

/** The page's filters, sort and page from its query (unknown values fall back to the defaults). */
export function pageFilters(query: PageQuery): RunsPageQuery {
  return {
    status: (RUN_STATUSES as readonly string[]).includes(query.status ?? "") ? query.status : undefined,
    suite: query.suite || undefined,
    environment: query.environment || undefined,
    trigger: query.trigger === "manual" || query.trigger === "ci" ? query.trigger : undefined,
    q: query.q?.trim() || undefined,
    sort: ((PAGE_SORTS as readonly string[]).includes(query.sort ?? "")
      ? query.sort
      : "started_at") as PageSort,
    dir: query.dir === "asc" ? "asc" : "desc",
    page: query.page ?? 1,
    perPage: PER_PAGE,
  };
}

/** Everything the runs page shows: a page of runs, and the selected run with its journeys and log. */
export async function runsPageData(
  database: Database,
  e2eConfig: E2EConfig,
  query: PageQuery,
  canDelete: boolean,
): Promise<E2EPageData> {
  const filters = pageFilters(query);
  const [{ rows, total }, run] = await Promise.all([
    listRunsPage(database, filters),
    query.run ? findRun(database, query.run) : undefined,
  ]);
  // The table's 5 s refresh shows no health; everything else does.
  const pairs = new Map<string, SuiteEnvironment>();
  for (const r of query.fragment === "runs" ? [] : query.fragment === "detail" ? [run] : [...rows, run])
    if (r) pairs.set(JSON.stringify([r.suite_id, r.environment_label]), r);
  const health = await journeyHealth(database, [...pairs.values()]);
  const healthOf = (suite: string, environment: string, journey: string) =>
    health.find(
      (h) => h.suite_id === suite && h.environment_label === environment && h.journey_id === journey,
    );
  let detail: E2EPageData["detail"];
  if (query.run) {
    if (run) {
      const results = await listResultRows(database, run.id);
      let log: Extract<NonNullable<E2EPageData["detail"]>, { run: unknown }>["log"];
      const journey = query.journey && results.find((r) => r.journey_id === query.journey);
      if (journey) {
        try {
          const { content } = await readLog(database, run.id, journey.journey_id);
          log = {
            journeyId: journey.journey_id,
            lines: parseJourneyLog(content.slice(0, 200_000)),
            truncated: content.length > 200_000,
          };
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          log = { journeyId: journey.journey_id, lines: [], error: error.message };
        }
      }
      detail = {
        run,
        results: results.map((r) => ({
          ...r,
          description: journeyDescription(e2eConfig.journeysDir, r.journey_id),
          health: healthOf(run.suite_id, run.environment_label, r.journey_id),
        })),
        history: query.history ? healthOf(run.suite_id, run.environment_label, query.history) : undefined,
        log,
      };
    } else {
      detail = { missing: query.run };
    }
  }
  return {
    filters,
    rows,
    total,
    suites: [...e2eConfig.suites.keys()].sort(),
    environments: [...e2eConfig.environments.keys()].sort(),
    canDelete,
    health: query.fragment
      ? []
      : health.filter((h) =>
          rows.some((r) => r.suite_id === h.suite_id && r.environment_label === h.environment_label),
        ),
    detail,
  };
}
