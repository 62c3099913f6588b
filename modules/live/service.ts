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

/**
 * Tells every web instance that the device list changed in a way no devices-table trigger sees (tags,
 * labels, display names): open device lists and dashboards refresh. Inside a transaction: at commit.
 */
export async function announceFleet(sql: Sql): Promise<void> {
  await sql`select pg_notify(${LIVE_CHANNEL}, 'devices')`;
}

export type { FleetSnapshot } from "./hub";
