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
import type { Clock } from "../../shared/clock";
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

/**
 * The counts of the devices matching a condition (the whole fleet, or a saved view on the dashboard),
 * exactly, every read: a pass over the matching devices only, which the condition's indexes find
 * (docs/fleet.md).
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

/** The fleet's totals for one process (built once by createServices), remembered per online window. */
export class FleetCounter {
  private readonly remembered = new Map<number, Remembered>();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly limits = { exactUpTo: EXACT_UP_TO, refreshMs: REFRESH_MS },
  ) {}

  /** Counts now, exactly, and remembers the result. */
  async count(onlineWindowSeconds: number): Promise<FleetCounts> {
    const counts = await countMatchingFleet(this.sql, onlineWindowSeconds, this.sql`true`);
    this.remembered.set(onlineWindowSeconds, { counts, at: this.clock.now() });
    return counts;
  }

  /** Totals; online/offline count approved devices only. Exact while counting is cheap (see above). */
  async counts(onlineWindowSeconds: number): Promise<FleetCounts> {
    const last = this.remembered.get(onlineWindowSeconds);
    if (!last || last.counts.total <= this.limits.exactUpTo) return this.count(onlineWindowSeconds);
    if (this.clock.now() - last.at >= this.limits.refreshMs && !last.refreshing) {
      last.refreshing = this.count(onlineWindowSeconds);
      // A failed refresh is retried by the next reader; the last counts stay meanwhile.
      last.refreshing
        .catch(() => {})
        .finally(() => {
          last.refreshing = undefined;
        });
    }
    return last.counts;
  }
}
