import { Badge } from "../../../ui/components";
import type { JourneyHealth } from "../health";
import type { JourneyLogLine } from "../logs";
import type { ResultRow, RunRow } from "../model";
import type { RunsPageQuery, RunsPageRow } from "../queries";

export interface E2EPageData {
  filters: RunsPageQuery;
  rows: RunsPageRow[];
  total: number;
  suites: string[];
  environments: string[];
  canDelete: boolean;
  /** Journey health of the suite/environment pairs of the listed runs (not on the 5 s refresh). */
  health: JourneyHealth[];
  detail?:
    | {
        run: RunRow;
        results: (ResultRow & { description: string; health?: JourneyHealth })[];
        /** `&history=<journey>`: that journey's last runs in this run's suite and environment. */
        history?: JourneyHealth;
        log?: { journeyId: string; lines: JourneyLogLine[]; truncated?: boolean; error?: string };
      }
    | { missing: string };
}

type Tone = "ok" | "warn" | "danger" | "info" | undefined;

function statusTone(status: string): Tone {
  switch (status) {
    case "passed":
      return "ok";
    case "failed":
      return "danger";
    case "blocked":
    case "skipped":
      return "warn";
    case "running":
      return "info";
    default:
      return undefined;
  }
}

export function StatusBadge({ status }: { status: string }) {
  return <Badge tone={statusTone(status)} label={status} />;
}

/** /e2e (or `path`) with the current filters and `changes` applied ("" or undefined drops a parameter). */
export function pageUrl(
  filters: RunsPageQuery,
  changes: Record<string, string | number | undefined> = {},
  extra = "",
  path = "/e2e",
): string {
  const params = new URLSearchParams();
  const base: Record<string, string | number | undefined> = {
    status: filters.status,
    suite: filters.suite,
    environment: filters.environment,
    trigger: filters.trigger,
    q: filters.q,
    sort: filters.sort === "started_at" ? undefined : filters.sort,
    dir: filters.dir === "desc" ? undefined : filters.dir,
    page: filters.page > 1 ? filters.page : undefined,
  };
  for (const [key, value] of Object.entries({ ...base, ...changes })) {
    if (value !== undefined && value !== "") params.set(key, String(value));
  }
  const query = params.toString();
  return `${path}${query ? `?${query}` : ""}${extra && query ? `&${extra}` : extra ? `?${extra}` : ""}`;
}

export function durationText(start: Date | null, end: Date | null, ms?: number | null): string {
  const value = ms ?? (start && end ? end.getTime() - start.getTime() : null);
  if (value === null || value === undefined) return "—";
  if (value < 1000) return `${value} ms`;
  if (value < 120_000) return `${(value / 1000).toFixed(1)} s`;
  return `${Math.round(value / 60_000)} min`;
}
