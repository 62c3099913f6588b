/**
 * Device sightings: which devices each heartbeat batch accepted, stamped with the batch's `now()` —
 * the very value the batch wrote to their `last_seen_at` (table `device_sightings`, migration 0020).
 *
 * `last_seen_at` has no index on purpose: every heartbeat rewrites it, and an index on it would turn
 * each of those HOT updates into one that writes every index of `devices`. A sighting costs a batch one
 * small insert instead, and gives the device list two things without reading every device row:
 *   - the most recently seen devices, newest first (walk the sightings backwards), and
 *   - the devices seen within the online window (a superset of those online).
 *
 * The invariant both rely on: a device whose `last_seen_at` is t, with t at most
 * SIGHTINGS_RETENTION_SECONDS old, has a sighting stamped t. Only the heartbeat writes `last_seen_at`,
 * in the same statement as its sighting; the prune job deletes only sightings older than the retention.
 */
import type { Sql } from "../platform/database";

/** How long sightings are kept: at least the default online window (5 min), with room. */
export const SIGHTINGS_RETENTION_SECONDS = 900;

/**
 * At most this many sightings are read for one list page: beyond it (a fleet checking in faster than
 * a page can walk, or filters that match few of the recent devices) the page reads the devices table.
 */
export const SIGHTINGS_READ_MAX = 20_000;

/** The `sighted` CTE's body in the heartbeat statement: one row for the batch's accepted devices. */
export function recordSightings(sql: Sql) {
  return sql`insert into device_sightings (seen_at, device_ids)
      select now(), array_agg(id) from accepted having count(*) > 0`;
}

/** Deletes sightings past the retention; returns how many rows went. */
export async function pruneSightings(sql: Sql, retentionSeconds = SIGHTINGS_RETENTION_SECONDS) {
  const result = await sql`
    delete from device_sightings where seen_at < now() - make_interval(secs => ${retentionSeconds})`;
  return result.count;
}

/**
 * Whether the devices seen within the last `windowSeconds` are few enough (at most SIGHTINGS_READ_MAX
 * sightings) to be read from the sightings rather than found among every device row.
 */
export async function fewSeenWithin(sql: Sql, windowSeconds: number): Promise<boolean> {
  if (windowSeconds > SIGHTINGS_RETENTION_SECONDS) return false;
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select unnest(device_ids) from device_sightings
      where seen_at >= now() - make_interval(secs => ${windowSeconds})
      limit ${SIGHTINGS_READ_MAX + 1}) seen`;
  return row!.n <= SIGHTINGS_READ_MAX;
}

/**
 * `and d.id = any(...)` over `devices d`: the devices seen within the window, a superset of those whose
 * `last_seen_at` is inside it. Only when fewSeenWithin said so: it reads every such sighting.
 */
export function seenWithinCondition(sql: Sql, windowSeconds: number) {
  return sql`and d.id = any(array(select unnest(device_ids) from device_sightings
    where seen_at >= now() - make_interval(secs => ${windowSeconds})))`;
}

/**
 * The newest SIGHTINGS_READ_MAX sightings within the retention, in scan order, from the cursor's time
 * on (`seen_at <= after` walking backwards, `>= after` forwards): columns `seen_at, id`. A device's
 * older sightings are in it too; join on `d.last_seen_at = seen_at` to keep its latest.
 */
export function recentSightings(sql: Sql, direction: "desc" | "asc", from: string | undefined) {
  const bound = from
    ? direction === "desc"
      ? sql`and s.seen_at <= ${from}::timestamptz`
      : sql`and s.seen_at >= ${from}::timestamptz`
    : sql``;
  return sql`
    select s.seen_at, u.id from device_sightings s cross join lateral unnest(s.device_ids) as u(id)
    where s.seen_at >= now() - make_interval(secs => ${SIGHTINGS_RETENTION_SECONDS}) ${bound}
    order by s.seen_at ${sql.unsafe(direction)}
    limit ${SIGHTINGS_READ_MAX}`;
}

/**
 * The seen_at of the last sighting recentSightings reads when it reads its whole limit (null when it
 * reads fewer: then it read every sighting of its range). A device seen at exactly that moment may
 * be in a sighting it did not read, so only pages ending strictly before it are certain.
 */
export function sightingsEdge(sql: Sql, direction: "desc" | "asc", from: string | undefined) {
  const last = direction === "desc" ? sql`min(r.seen_at)` : sql`max(r.seen_at)`;
  return sql`(select case when count(*) = ${SIGHTINGS_READ_MAX} then ${last} end
    from (${recentSightings(sql, direction, from)}) r)`;
}

/** Whether `at` is recent enough that every device seen since has its sighting (SQL boolean). */
export function withinRetention(sql: Sql, at: string) {
  return sql`(${at}::timestamptz >= now() - make_interval(secs => ${SIGHTINGS_RETENTION_SECONDS}))`;
}
