// The charts and the dashboard that read the rollups: 7- and 30-day charts from hours, the day's from
// 6-minute buckets plus the raw rows after them, 6 hours from raw rows by the rollups' number rule;
// deleting a device deletes its rollups.
import { describe, expect, test } from "bun:test";
import telemetryRollupJob from "../../jobs/telemetry-rollup";
import { rollUpTelemetry, SETTLE_MS } from "../../modules/telemetry/rollups";
import { deviceChartData, fleetActivity } from "../../modules/telemetry/series";
import { deleteDeviceTelemetry, recordTelemetry } from "../../modules/telemetry/service";
import { startTestApp } from "../helpers/app";
import { cpu, HOUR, MINUTE, rollupReads, USAGE } from "./rollup-fixtures";

// The web role only: these tests run the rollup themselves, and a worker's every-minute run of it
// would race them for the watermark row (a run that finds it locked folds nothing).
const app = await startTestApp({ OUTPOST_ROLE: "web" });
const sql = app.database.sql;
const { hourly, sixMinutes } = rollupReads(sql);
const at = (ms: number) => new Date(ms);
/** The chart field of USAGE: its builder option key. */
const CPU = "cpu.usage_pct";

describe("charts from rollups", () => {
  test("charts over 7 and 30 days read the rollups: hourly averages over every heartbeat", async () => {
    const d = crypto.randomUUID();
    const now = Date.now();
    const hour = Math.floor(now / HOUR) * HOUR - 2 * HOUR;
    for (const [offset, usage] of [
      [1, 10],
      [2, 20],
      [3, 60],
      [HOUR / MINUTE + 5, 8],
    ] as const)
      await recordTelemetry(sql, d, cpu(usage), new Date(hour + offset * MINUTE));
    // The job's run with the real clock ends at its start (less the margin), however fast it folds.
    const jobStarted = Date.now();
    await telemetryRollupJob.run({}, app.services);
    expect(Date.now() - jobStarted).toBeLessThan(5000);
    const [progress] = await sql<{ ms: number }[]>`
      select extract(epoch from rolled_until)::float8 * 1000 as ms from telemetry_rollup_progress`;
    // (It reads its start a moment after this test's: a second of slack, well short of a run that chases
    // the clock, which the time bound above catches.)
    expect(progress!.ms).toBeLessThanOrEqual(jobStarted - SETTLE_MS + 1000);
    // The raw rows go: the chart still has them, from the rollups.
    await sql`delete from telemetry_events where device_id = ${d}::uuid`;
    const week = await deviceChartData(sql, d, [CPU], new Date(now - 7 * 86_400_000), new Date(now));
    expect(week.stepSeconds).toBe(3600);
    expect(week.events).toBe(4);
    expect(week.t).toEqual([hour / 1000, hour / 1000 + 3600]);
    expect(week.series).toEqual([[30, 8]]);
    const month = await deviceChartData(sql, d, [CPU], new Date(now - 30 * 86_400_000), new Date(now));
    expect(month.stepSeconds).toBe(3 * 3600);
    expect(month.events).toBe(4);
    // Three-hour buckets from the range's first whole hour: the two hours share one or not.
    const first = Math.floor((now - 30 * 86_400_000) / HOUR) * HOUR;
    const bucket = (ms: number) => first + Math.floor((ms - first) / (3 * HOUR)) * 3 * HOUR;
    expect(month.series[0]).toEqual(
      bucket(hour) === bucket(hour + HOUR) ? [(10 + 20 + 60 + 8) / 4] : [30, 8],
    );
    // A day's chart reads the 6-minute rollups: the same heartbeats, in their 6-minute buckets.
    const day = await deviceChartData(sql, d, [CPU], new Date(now - 86_400_000), new Date(now));
    expect(day.stepSeconds).toBe(360);
    expect(day.events).toBe(4);
    expect(day.t).toEqual([hour / 1000, (hour + HOUR) / 1000]);
    expect(day.series).toEqual([[30, 8]]);
    // Six hours still read raw rows (gone here).
    const sixHours = await deviceChartData(sql, d, [CPU], new Date(now - 6 * HOUR), new Date(now));
    expect(sixHours.events).toBe(0);
    // A heartbeat the job has not folded in yet is on the chart all the same (read raw).
    const latest = Date.now();
    await recordTelemetry(sql, d, cpu(50), new Date(latest));
    const current = await deviceChartData(
      sql,
      d,
      [CPU],
      new Date(latest - 7 * 86_400_000),
      new Date(latest + 1),
    );
    expect(current.events).toBe(5);
    expect(current.t.at(-1)).toBe(Math.floor(latest / HOUR) * 3600);
    expect(current.series[0]!.at(-1)).toBe(latest >= hour + 2 * HOUR ? 50 : (8 + 50) / 2);

    // The dashboard's fleet chart: devices per hour from the fleet rollup.
    const activity = await fleetActivity(sql);
    expect(activity.t).toHaveLength(24);
    const [row] = await sql<{ devices: number }[]>`
      select devices from telemetry_fleet_hourly where hour = ${new Date(hour).toISOString()}::timestamptz`;
    expect(row!.devices).toBeGreaterThanOrEqual(1);
    expect(activity.devices[activity.t.indexOf(hour / 1000)]).toBe(row!.devices);

    // Deleting a device's telemetry deletes its rollups.
    await deleteDeviceTelemetry(sql, d);
    expect(await hourly(d, hour)).toBeUndefined();
    expect(await sixMinutes(d)).toEqual([]);
  });

  test("six hours' chart averages each bucket's values by the rollups' rule, odd values and empty buckets included", async () => {
    const d = crypto.randomUUID();
    const to = Date.now();
    const from = to - 6 * HOUR; // 240 buckets of 90 s from here
    const bucket = (i: number, offsetS: number) => new Date(from + i * 90_000 + offsetS * 1000);
    // Stored out of time order: the chart must not depend on the order rows come back in.
    await recordTelemetry(sql, d, cpu("1e999"), bucket(7, 10)); // unchartable: the bucket has no value
    await recordTelemetry(sql, d, cpu(10), bucket(3, 5));
    await recordTelemetry(sql, d, cpu(" 20 "), bucket(3, 50)); // a numeric string counts
    await recordTelemetry(sql, d, cpu("twelve"), bucket(3, 60)); // text does not
    await recordTelemetry(sql, d, { scripts: {} }, bucket(3, 70)); // nor a missing field
    await recordTelemetry(sql, d, cpu(1 / 3), bucket(0, 1));
    const chart = await deviceChartData(sql, d, [CPU, "cpu.cores"], new Date(from), new Date(to));
    expect(chart.events).toBe(6);
    expect(chart.stepSeconds).toBe(90);
    expect(chart.t).toEqual([0, 3, 7].map((i) => (from + i * 90_000) / 1000));
    expect(chart.series).toEqual([
      [0.333, 15, null],
      [null, null, null],
    ]);
  });

  test("a dense six hours' chart reads a sample of each bucket, and counts every heartbeat", async () => {
    const d = crypto.randomUUID();
    const to = Date.now();
    // 4,320 heartbeats over 6 h (every 5 s), the value constant within each 90-second bucket.
    await sql`insert into telemetry_events (id, device_id, recorded_at, payload)
      select gen_random_uuid(), ${d}::uuid, ${new Date(to - 6 * HOUR).toISOString()}::timestamptz + make_interval(secs => s * 5),
        json_build_object('scripts', json_build_object('cpu', json_build_object('data', json_build_object('output',
          json_build_object('usage_pct', (s / 18) % 100)))))
      from generate_series(0, 4319) as s`;
    const chart = await deviceChartData(sql, d, [CPU], new Date(to - 6 * HOUR), new Date(to));
    expect(chart.events).toBe(4320);
    expect(chart.stepSeconds).toBe(90);
    expect(chart.t).toHaveLength(240);
    expect(chart.series[0]).toEqual(Array.from({ length: 240 }, (_, i) => i % 100));
  });

  test("a day's chart: exact 6-minute averages of every heartbeat from the rollups, the raw rows after them, raw before the tier's upgrade", async () => {
    // A fresh start: the job finds its first watermark at the oldest telemetry, as on a new install.
    await sql`truncate telemetry_6min, telemetry_hourly, telemetry_fleet_hourly, telemetry_rollup_progress`;
    const d = crypto.randomUUID();
    const now = Date.now();
    // 2,880 heartbeats over the last 24 h (every 30 s, on whole half-minutes), each a different value,
    // and one from 50 hours ago: older than the 6-minute tier keeps.
    const first = Math.ceil((now - 86_400_000) / 30_000) * 30_000;
    await sql`insert into telemetry_events (id, device_id, recorded_at, payload)
      select gen_random_uuid(), ${d}::uuid, ${new Date(first).toISOString()}::timestamptz + make_interval(secs => s * 30),
        json_build_object('scripts', json_build_object('cpu', json_build_object('data', json_build_object('output',
          json_build_object('usage_pct', s % 97)))))
      from generate_series(0, 2879) as s where ${new Date(first).toISOString()}::timestamptz + make_interval(secs => s * 30) < now()`;
    await recordTelemetry(sql, d, cpu(1), new Date(now - 50 * HOUR));
    const run = await rollUpTelemetry(sql, { now: at(now) });
    const watermark = run.rolledUntil!.toISOString();
    expect(run.rolledUntil!.getTime() % (6 * MINUTE)).toBe(0);
    expect((await sixMinutes(d))[0]!.bucket).toBeGreaterThanOrEqual(now - 48 * HOUR - 6 * MINUTE);
    expect(await hourly(d, Math.floor((now - 50 * HOUR) / HOUR) * HOUR)).toEqual({
      heartbeats: 1,
      stats: { [USAGE]: [1, 1, 1, 1] },
    });
    // A heartbeat after the job's run: on the chart from the raw rows.
    await recordTelemetry(sql, d, cpu(500), new Date(now + 1000));

    const to = now + 2000;
    const from = to - 86_400_000;
    // Rolled-up buckets are whole: the first one starts on the 6-minute boundary before `from`.
    const firstBucket = Math.floor(from / (6 * MINUTE)) * 6 * MINUTE;
    const rows = await sql<{ ms: number; v: number }[]>`
      select extract(epoch from recorded_at)::float8 * 1000 as ms, (payload #>> '{scripts,cpu,data,output,usage_pct}')::float8 as v
      from telemetry_events where device_id = ${d}::uuid and recorded_at >= ${new Date(firstBucket).toISOString()}::timestamptz`;
    const expected = new Map<number, number[]>();
    for (const row of rows) {
      const start = Math.floor(row.ms / (6 * MINUTE)) * 6 * MINUTE;
      expected.set(start, [...(expected.get(start) ?? []), row.v]);
    }
    const starts = [...expected.keys()].sort((x, y) => x - y);
    const average = (values: number[]) =>
      Math.round((values.reduce((sum, v) => sum + v, 0) / values.length) * 1000) / 1000;

    // Before the tier was complete (an upgrade a moment ago), the day is read from raw rows: a sample
    // of each bucket, in buckets from the range's start.
    await sql`update telemetry_rollup_progress set recent_from = now()`;
    const sampled = await deviceChartData(sql, d, [CPU], new Date(from), new Date(to));
    expect(sampled.events).toBe(rows.filter((row) => row.ms >= from).length);
    expect(sampled.t[0]).toBe(from / 1000);
    await sql`update telemetry_rollup_progress set recent_from = ${new Date(now - 50 * HOUR).toISOString()}::timestamptz`;

    // The raw rows the job folded go: the chart has them all the same, from the tier.
    await sql`delete from telemetry_events where device_id = ${d}::uuid and recorded_at < ${watermark}::timestamptz`;
    const day = await deviceChartData(sql, d, [CPU], new Date(from), new Date(to));
    expect(day.stepSeconds).toBe(360);
    expect(day.events).toBe(rows.length);
    expect(day.t).toEqual(starts.map((ms) => ms / 1000));
    expect(day.series[0]).toEqual(starts.map((ms) => average(expected.get(ms)!)));
    expect(day.series[0]!.at(-1)).toBe(average(expected.get(starts.at(-1)!)!));
  });
});
