import type { Sql } from "../../modules/platform/database";

/**
 * Sets when a device was last seen, as a heartbeat `secondsAgo` seconds ago would have (null: never):
 * `last_seen_at` and the sighting stamped with the same moment (modules/devices/sightings.ts), which
 * the device list relies on. Tests use this instead of writing `last_seen_at` alone.
 */
export async function markSeen(sql: Sql, deviceId: string, secondsAgo: number | null) {
  if (secondsAgo === null) {
    await sql`update devices set last_seen_at = null where id = ${deviceId}::uuid`;
    return;
  }
  await sql`
    with seen as (
      update devices set last_seen_at = now() - make_interval(secs => ${secondsAgo})
      where id = ${deviceId}::uuid returning id, last_seen_at)
    insert into device_sightings (seen_at, device_ids) select last_seen_at, array[id] from seen`;
}
