/**
 * Device sightings: which devices each heartbeat batch accepted, stamped with the batch's `now()` —
 * the very value the batch wrote to their `last_seen_at` (tables `device_sightings` and
 * `device_last_sightings`, migration 0020).
 *
 * `last_seen_at` has no index on purpose: every heartbeat rewrites it, and an index on it would turn
 * each of those HOT updates into one that writes every index of `devices`. A sighting costs a batch one
 * small insert instead, and gives the device list two things without reading every device row:
 *   - the most recently seen devices in order (walk the sightings by time), and
 *   - the devices seen within the online window (a superset of those online).
 *
 * The invariant both rely on: a device whose `last_seen_at` is t has a sighting stamped t, in
 * `device_sightings` while it is younger than SIGHTINGS_RETENTION_SECONDS, after that in
 * `device_last_sightings` (the prune job moves it, in one statement). Only the heartbeat writes
 * `last_seen_at`, in the same statement as its sighting.
 */
import type { Sql } from "../platform/database";

/** How long every sighting is kept; after it, only each device's latest. */
export const SIGHTINGS_RETENTION_SECONDS = 900;

/**
 * At most this many sightings are read for one list page: beyond it (a fleet checking in faster than
 * a page can walk, or filters that match few of the devices read) the page reads the devices table.
 */
export const SIGHTINGS_READ_MAX = 20_000;

/** The `sighted` CTE's body in the heartbeat statement: one row for the batch's accepted devices. */
export function recordSightings(sql: Sql) {
  return sql`insert into device_sightings (seen_at, device_ids)
      select now(), array_agg(id) from accepted having count(*) > 0`;
}

/**
 * Deletes the sightings past the retention, keeping (in `device_last_sightings`) each one that is still
 * its device's latest. Returns how many sighting rows went and how many devices' latest were kept.
 */
export async function pruneSightings(sql: Sql, retentionSeconds = SIGHTINGS_RETENTION_SECONDS) {
  const [row] = await sql<{ pruned: number; kept: number }[]>`
    with aged as (
      delete from device_sightings where seen_at < now() - make_interval(secs => ${retentionSeconds})
      returning seen_at, device_ids),
    kept as (
      insert into device_last_sightings (device_id, seen_at)
      select d.id, a.seen_at from aged a cross join lateral unnest(a.device_ids) as u(id)
        join devices d on d.id = u.id and d.last_seen_at = a.seen_at
      on conflict (device_id) do update set seen_at = excluded.seen_at
      returning 1)
    select (select count(*) from aged)::int as pruned, (select count(*) from kept)::int as kept`;
  return row!;
}

/** Sightings from `since` on, from both tables (`seen_at, id`; the second only for silent devices). */
function sightingsSince(sql: Sql, since: ReturnType<typeof windowStart>) {
  return sql`
    select unnest(device_ids) as id from device_sightings where seen_at >= ${since}
    union all
    select device_id from device_last_sightings where seen_at >= ${since}`;
}

function windowStart(sql: Sql, windowSeconds: number) {
  return sql`now() - make_interval(secs => ${windowSeconds})`;
}

/**
 * Whether the devices seen within the last `windowSeconds` are few enough (at most SIGHTINGS_READ_MAX
 * sightings) to be read from the sightings rather than found among every device row.
 */
export async function fewSeenWithin(sql: Sql, windowSeconds: number): Promise<boolean> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      ${sightingsSince(sql, windowStart(sql, windowSeconds))} limit ${SIGHTINGS_READ_MAX + 1}) seen`;
  return row!.n <= SIGHTINGS_READ_MAX;
}

/**
 * `and d.id = any(...)` over `devices d`: the devices seen within the window, a superset of those whose
 * `last_seen_at` is inside it. Only when fewSeenWithin said so: it reads every such sighting.
 */
export function seenWithinCondition(sql: Sql, windowSeconds: number) {
  return sql`and d.id = any(array(${sightingsSince(sql, windowStart(sql, windowSeconds))}))`;
}

/**
 * The first SIGHTINGS_READ_MAX sightings of both tables in scan order (newest first for "desc"), from
 * the cursor's time on (`seen_at <= from` newest first, `>= from` oldest first): columns `seen_at,
 * id`. A device's older sightings are in it too; join on `d.last_seen_at = seen_at` to keep its latest.
 */
export function readSightings(sql: Sql, direction: "desc" | "asc", from: string | undefined) {
  const dir = sql.unsafe(direction);
  const bound = (column: string) =>
    from
      ? sql`where ${sql.unsafe(column)} ${sql.unsafe(direction === "desc" ? "<=" : ">=")} ${from}::timestamptz`
      : sql``;
  return sql`
    select seen_at, id from (
      (select s.seen_at, u.id from device_sightings s cross join lateral unnest(s.device_ids) as u(id)
        ${bound("s.seen_at")} order by s.seen_at ${dir} limit ${SIGHTINGS_READ_MAX})
      union all
      (select l.seen_at, l.device_id from device_last_sightings l
        ${bound("l.seen_at")} order by l.seen_at ${dir} limit ${SIGHTINGS_READ_MAX})
    ) both_tables
    order by seen_at ${dir}
    limit ${SIGHTINGS_READ_MAX}`;
}

/**
 * The seen_at of the last sighting readSightings reads when it reads its whole limit (null when it
 * reads fewer: then it read every sighting of its range). A device seen at exactly that moment may
 * be in a sighting it did not read, so only pages ending strictly before it are certain.
 */
export function sightingsEdge(sql: Sql, direction: "desc" | "asc", from: string | undefined) {
  const last = direction === "desc" ? sql`min(r.seen_at)` : sql`max(r.seen_at)`;
  return sql`(select case when count(*) = ${SIGHTINGS_READ_MAX} then ${last} end
    from (${readSightings(sql, direction, from)}) r)`;
}
