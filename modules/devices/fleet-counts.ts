/**
 * The fleet's totals (dashboard cards, the device list's "of N", metrics, live updates).
 *
 * Counting is a pass over every device row (online needs last_seen_at, which is not indexed so that
 * heartbeats stay HOT updates), which grows with the fleet (docs/scaling.md has the figures). Up to
 * EXACT_UP_TO devices the counts are exact on every read. Beyond, readers get the last counts at once
 * and a refresh runs in the background when they are older than REFRESH_MS, so no page waits for a
 * scan of a large fleet; the live updates count afresh after every change they hear of. The choice
 * is by size, not by a timing, so a busy moment never turns a small fleet's counts stale.
 */
import type { Sql } from "../platform/database";
import type { DeviceCondition } from "./conditions";

export interface FleetCounts {
  total: number;
  pending: number;
  approved: number;
  rejected: number;
  online: number;
  offline: number;
}

/** Counting 100,000 rows took ~70 ms on the 2-core machine on a slow day: every list page paid it. */
export const EXACT_UP_TO = 20_000;
export const REFRESH_MS = 10_000;

interface Remembered {
  counts: FleetCounts;
  at: number;
  refreshing?: Promise<FleetCounts>;
}

/** Per database and online window (one process may serve several apps in tests). */
const remembered = new WeakMap<Sql, Map<number, Remembered>>();

/** Counts now, exactly, and remembers the result. */
export async function countFleet(sql: Sql, onlineWindowSeconds: number): Promise<FleetCounts> {
  const row = await countMatchingFleet(sql, onlineWindowSeconds, sql`true`);
  const byWindow = remembered.get(sql) ?? new Map<number, Remembered>();
  remembered.set(sql, byWindow);
  byWindow.set(onlineWindowSeconds, { counts: row, at: Date.now() });
  return row;
}

/**
 * The counts of the devices matching a condition (a saved view on the dashboard), exactly, every read:
 * a pass over the matching devices only, which the condition's indexes find (docs/fleet.md).
 */
export async function countMatchingFleet(sql: Sql, onlineWindowSeconds: number, where: DeviceCondition) {
  const [row] = await sql<FleetCounts[]>`
    select count(*)::int as total,
      count(*) filter (where approval_status = 'pending')::int as pending,
      count(*) filter (where approval_status = 'approved')::int as approved,
      count(*) filter (where approval_status = 'rejected')::int as rejected,
      count(*) filter (where approval_status = 'approved'
        and last_seen_at >= now() - make_interval(secs => ${onlineWindowSeconds}))::int as online,
      count(*) filter (where approval_status = 'approved'
        and (last_seen_at is null or last_seen_at < now() - make_interval(secs => ${onlineWindowSeconds})))::int as offline
    from devices d where ${where}`;
  return row!;
}

/** Totals; online/offline count approved devices only. Exact while counting is cheap (see above). */
export async function fleetCounts(
  sql: Sql,
  onlineWindowSeconds: number,
  { exactUpTo = EXACT_UP_TO, refreshMs = REFRESH_MS } = {},
): Promise<FleetCounts> {
  const last = remembered.get(sql)?.get(onlineWindowSeconds);
  if (!last || last.counts.total <= exactUpTo) return countFleet(sql, onlineWindowSeconds);
  if (Date.now() - last.at >= refreshMs && !last.refreshing) {
    last.refreshing = countFleet(sql, onlineWindowSeconds);
    // A failed refresh is retried by the next reader; the last counts stay meanwhile.
    last.refreshing
      .catch(() => {})
      .finally(() => {
        last.refreshing = undefined;
      });
  }
  return last.counts;
}
