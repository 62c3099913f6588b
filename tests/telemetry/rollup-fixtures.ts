// What the rollup tests share: a payload with a cpu figure, and reads of the three rollup tables.
import type { Sql } from "../../modules/platform/database";

export const HOUR = 3_600_000;
export const MINUTE = 60_000;
export const USAGE = "scripts.cpu.data.output.usage_pct";

export const cpu = (usage: unknown, extra: Record<string, unknown> = {}) => ({
  scripts: { cpu: { data: { status: "success", output: { usage_pct: usage, ...extra } } } },
});

export function rollupReads(sql: Sql) {
  return {
    async hourly(deviceId: string, hour: number) {
      const [row] = await sql<{ heartbeats: number; stats: Record<string, number[]> }[]>`
        select heartbeats, stats from telemetry_hourly
        where device_id = ${deviceId}::uuid and hour = ${new Date(hour).toISOString()}::timestamptz`;
      return row;
    },
    async sixMinutes(deviceId: string) {
      const rows = await sql<{ bucket: number; heartbeats: number; stats: Record<string, number[]> }[]>`
        select extract(epoch from bucket)::float8 * 1000 as bucket, heartbeats, stats from telemetry_6min
        where device_id = ${deviceId}::uuid order by bucket`;
      return [...rows];
    },
    async fleetHour(hour: number) {
      const [row] = await sql<{ devices: number; heartbeats: number }[]>`
        select devices, heartbeats::int as heartbeats from telemetry_fleet_hourly
        where hour = ${new Date(hour).toISOString()}::timestamptz`;
      return row;
    },
  };
}
