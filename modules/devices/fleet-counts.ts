/**
 * The fleet's totals (dashboard cards, the device list's "of N", metrics, live updates), and a saved
 * view's (its dashboard), counted the same way.
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

/** Counting 100,000 rows took ~70 ms on the 2-core machine on a slow day: every list page paid it; a view
 * of ~50,000 devices out of 1,000,000, 237 ms at p95 (docs/fleet.md, Figures). */
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

/** What is counted: the whole fleet, or the devices of a scope (a saved view: its id and query as key). */
export interface CountScope {
  key: string;
  where: DeviceCondition;
}

/** Scopes remembered at most (views are few; a deleted or edited one's entry ages out). */
const REMEMBERED_MAX = 256;

/**
 * The fleet's and scopes' totals for one process (built once by createServices), remembered per scope
 * and online window.
 */
export class FleetCounter {
  private readonly remembered = new Map<string, Remembered>();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly limits = { exactUpTo: EXACT_UP_TO, refreshMs: REFRESH_MS },
  ) {}

  /** Counts now, exactly, and remembers the result. */
  async count(onlineWindowSeconds: number, scope?: CountScope): Promise<FleetCounts> {
    const counts = await countMatchingFleet(this.sql, onlineWindowSeconds, scope?.where ?? this.sql`true`);
    const key = rememberedKey(onlineWindowSeconds, scope);
    this.remembered.delete(key); // re-inserted last: the oldest entry is the first in the map
    this.remembered.set(key, { counts, at: this.clock.now() });
    if (this.remembered.size > REMEMBERED_MAX) this.remembered.delete(this.remembered.keys().next().value!);
    return counts;
  }

  /** Totals; online/offline count approved devices only. Exact while counting is cheap (see above). */
  async counts(onlineWindowSeconds: number, scope?: CountScope): Promise<FleetCounts> {
    const last = this.remembered.get(rememberedKey(onlineWindowSeconds, scope));
    if (!last || last.counts.total <= this.limits.exactUpTo) return this.count(onlineWindowSeconds, scope);
    if (this.clock.now() - last.at >= this.limits.refreshMs && !last.refreshing) {
      last.refreshing = this.count(onlineWindowSeconds, scope);
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

const rememberedKey = (onlineWindowSeconds: number, scope: CountScope | undefined) =>
  `${onlineWindowSeconds}\u0000${scope?.key ?? ""}`;
