/**
 * What a scrape reads from PostgreSQL now, through each feature's service: devices by approval and
 * connectivity, the job queue per task, E2E runs per status, remote access, and the database
 * connections. Bounded queries (counts over indexed columns or small tables), one scrape at a time.
 */

import { fleetCounts } from "../devices/service";
import { countRunsByStatus } from "../e2e";
import { queueDepthByTask } from "../jobs/service";
import type { AppContext } from "../platform/context";
import { promClient, renderMetrics } from "../platform/metrics";
import { remoteAccessCounts } from "../remote-access/service";
import { deviceSettings } from "../settings/service";

type Ctx = Pick<AppContext, "config" | "database">;

export async function scrape(ctx: Ctx): Promise<string> {
  const { database } = ctx;
  const { onlineWindowSeconds } = await deviceSettings(ctx.config);
  const [fleet, queue, runs, remote, connections] = await Promise.all([
    fleetCounts(database.sql, onlineWindowSeconds),
    queueDepthByTask(database),
    countRunsByStatus(database),
    remoteAccessCounts(database.sql),
    database.sql<{ state: string; connections: number }[]>`
      select coalesce(state, 'unknown') as state, count(*)::int as connections from pg_stat_activity
      where datname = current_database() group by 1`,
  ]);
  const now = new promClient.Registry();
  const gauge = (name: string, help: string, labelNames: string[] = []) =>
    new promClient.Gauge({ name, help, labelNames, registers: [now] });

  const devices = gauge("outpost_devices", "Devices by approval status", ["approval"]);
  for (const approval of ["pending", "approved", "rejected"] as const)
    devices.set({ approval }, fleet[approval]);
  const connectivity = gauge("outpost_devices_connectivity", "Approved devices online and offline", [
    "state",
  ]);
  connectivity.set({ state: "online" }, fleet.online);
  connectivity.set({ state: "offline" }, fleet.offline);
  const depth = gauge("outpost_job_queue_depth", "Jobs waiting to run, by task", ["task"]);
  for (const row of queue) depth.set({ task: row.task }, row.waiting);
  const e2e = gauge("outpost_e2e_runs", "E2E runs stored, by status", ["status"]);
  for (const row of runs) e2e.set({ status: row.status }, row.runs);
  gauge("outpost_remote_access_leases", "Open remote-access leases").set(remote.leases);
  gauge("outpost_tunnels_connected", "Devices with a connected tunnel").set(remote.tunnels);
  const pool = gauge("outpost_db_connections", "Connections to Outpost's database, by state", ["state"]);
  for (const row of connections) pool.set({ state: row.state }, row.connections);
  gauge("outpost_db_pool_max", "Most connections this process opens").set(database.sql.options.max ?? 0);
  return renderMetrics(now);
}
