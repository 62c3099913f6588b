import type { Sql } from "../platform/database";
import { type Alert, type AlertRow, toAlert } from "./lifecycle";

/** The device page's panel: open alerts first, then the latest resolved ones (at most `limit`). */
export async function deviceAlerts(sql: Sql, deviceId: string, limit = 20): Promise<Alert[]> {
  const rows = await sql<AlertRow[]>`select * from alerts where device_id = ${deviceId}::uuid
    order by (status = 'resolved'), triggered_at desc limit ${limit}`;
  return rows.map(toAlert);
}
