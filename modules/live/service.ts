import type { Sql } from "../platform/database";
import { LIVE_CHANNEL } from "./hub";

/**
 * Tells every web instance that a device's page shows something new (`device:<id>`), for changes no
 * table trigger announces (a terminal session starting or ending). Inside a transaction it is sent at
 * commit.
 */
export async function announceDevice(sql: Sql, deviceId: string): Promise<void> {
  await sql`select pg_notify(${LIVE_CHANNEL}, ${`device:${deviceId}`})`;
}

export type { FleetSnapshot } from "./hub";
