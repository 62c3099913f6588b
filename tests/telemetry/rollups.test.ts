// Rollups: what the job folds in (per device and 6-minute bucket, per device and hour, per fleet hour),
// windows ending on bucket boundaries, how later windows merge, the settle margin, one runner at a
// time, retention, deletion, and the charts and dashboard that read them.
import { describe, expect, test } from "bun:test";
import telemetryRollupJob from "../../jobs/telemetry-rollup";
import { createLogger } from "../../modules/platform/logger";
import { asNumber, numericFields } from "../../modules/telemetry/numeric-fields";
import {
  dropExpiredRecentRollups,
  dropExpiredRollups,
  rollUpTelemetry,
  SETTLE_MS,
} from "../../modules/telemetry/rollups";
import { deviceChartData, fleetActivity } from "../../modules/telemetry/series";
import { deleteDeviceTelemetry, recordTelemetry } from "../../modules/telemetry/service";
import { startTestApp } from "../helpers/app";

const app = await startTestApp();
const sql = app.database.sql;
const HOUR = 3_600_000;
const MINUTE = 60_000;
// A virtual clock from yesterday 01:00 UTC (its partition exists), moving forward only.
const yesterday = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 86_400_000;
const H1 = yesterday + HOUR;
const at = (ms: number) => new Date(ms);

const cpu = (usage: unknown, extra: Record<string, unknown> = {}) => ({
  scripts: { cpu: { data: { status: "success", output: { usage_pct: usage, ...extra } } } },
});

async function hourly(deviceId: string, hour: number) {
  const [row] = await sql<{ heartbeats: number; stats: Record<string, number[]> }[]>`
    select heartbeats, stats from telemetry_hourly
    where device_id = ${deviceId}::uuid and hour = ${new Date(hour).toISOString()}::timestamptz`;
  return row;
}

async function sixMinutes(deviceId: string) {
  const rows = await sql<{ bucket: number; heartbeats: number; stats: Record<string, number[]> }[]>`
    select extract(epoch from bucket)::float8 * 1000 as bucket, heartbeats, stats from telemetry_6min
    where device_id = ${deviceId}::uuid order by bucket`;
  return [...rows];
}

async function fleetHour(hour: number) {
  const [row] = await sql<{ devices: number; heartbeats: number }[]>`
    select devices, heartbeats::int as heartbeats from telemetry_fleet_hourly
    where hour = ${new Date(hour).toISOString()}::timestamptz`;
  return row;
}

const USAGE = "scripts.cpu.data.output.usage_pct";

describe("telemetry rollups", () => {
  const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];

  test("fold heartbeats into device hours and fleet hours; later windows merge into the same hour", async () => {
    await recordTelemetry(sql, a, cpu(10, { temp: { core0: 40 } }), new Date(H1 + 5 * MINUTE));
    await recordTelemetry(sql, a, cpu("30"), new Date(H1 + 10 * MINUTE));
    await recordTelemetry(sql, b, cpu(50, { model: "arm" }), new Date(H1 + 6 * MINUTE));

    const first = await rollUpTelemetry(sql, { now: at(H1 + 20 * MINUTE) });
    expect(first.heartbeats).toBe(3);
    // The window ends on the last 6-minute boundary before now - the margin.
    expect(first.rolledUntil?.getTime()).toBe(H1 + 18 * MINUTE);
    expect(await sixMinutes(a)).toEqual([
      {
        bucket: H1,
        heartbeats: 1,
        stats: { [USAGE]: [1, 10, 10, 10], "scripts.cpu.data.output.temp.core0": [1, 40, 40, 40] },
      },
      { bucket: H1 + 6 * MINUTE, heartbeats: 1, stats: { [USAGE]: [1, 30, 30, 30] } },
    ]);
    expect(await sixMinutes(b)).toEqual([
      { bucket: H1 + 6 * MINUTE, heartbeats: 1, stats: { [USAGE]: [1, 50, 50, 50] } },
    ]);
    expect(await hourly(a, H1)).toEqual({
      heartbeats: 2,
      stats: { [USAGE]: [2, 40, 10, 30], "scripts.cpu.data.output.temp.core0": [1, 40, 40, 40] },
    });
    expect(await hourly(b, H1)).toEqual({ heartbeats: 1, stats: { [USAGE]: [1, 50, 50, 50] } });
    expect(await fleetHour(H1)).toEqual({ devices: 2, heartbeats: 3 });

    // More of the same hour (a again, c new) and the next hour.
    await recordTelemetry(sql, a, cpu(5), new Date(H1 + 30 * MINUTE));
    await recordTelemetry(sql, c, { scripts: {} }, new Date(H1 + 40 * MINUTE));
    await recordTelemetry(sql, a, cpu(100), new Date(H1 + HOUR + MINUTE));
    const second = await rollUpTelemetry(sql, { now: at(H1 + 2 * HOUR) });
    expect(second.heartbeats).toBe(3);
    expect(await hourly(a, H1)).toEqual({
      heartbeats: 3,
      stats: { [USAGE]: [3, 45, 5, 30], "scripts.cpu.data.output.temp.core0": [1, 40, 40, 40] },
    });
    expect(await hourly(c, H1)).toEqual({ heartbeats: 1, stats: {} });
    expect(await hourly(a, H1 + HOUR)).toEqual({ heartbeats: 1, stats: { [USAGE]: [1, 100, 100, 100] } });
    // a was seen in both windows of H1: still one device.
    expect(await fleetHour(H1)).toEqual({ devices: 3, heartbeats: 5 });
    expect(await fleetHour(H1 + HOUR)).toEqual({ devices: 1, heartbeats: 1 });
  });

  test("rows younger than the settle margin wait for the next run; nothing is read twice", async () => {
    const now = H1 + 3 * HOUR;
    await recordTelemetry(sql, b, cpu(70), new Date(now - 10_000));
    const run = await rollUpTelemetry(sql, { now: at(now) });
    expect(run.rolledUntil?.getTime()).toBe(now - 6 * MINUTE);
    expect(await hourly(b, H1 + 2 * HOUR)).toBeUndefined();
    const again = await rollUpTelemetry(sql, { now: at(now) });
    expect(again).toEqual({
      windows: 0,
      heartbeats: 0,
      passes: 0,
      rowsWritten: 0,
      rolledUntil: new Date(now - 6 * MINUTE),
    });
    // The next bucket boundary passed: the window closes.
    await rollUpTelemetry(sql, { now: at(now + MINUTE) });
    expect(await hourly(b, H1 + 2 * HOUR)).toEqual({ heartbeats: 1, stats: { [USAGE]: [1, 70, 70, 70] } });
    expect((await sixMinutes(b)).at(-1)).toEqual({
      bucket: now - 6 * MINUTE,
      heartbeats: 1,
      stats: { [USAGE]: [1, 70, 70, 70] },
    });
  });

  test("two runners at once: one folds, the other finds the watermark held; no hour counted twice", async () => {
    const start = H1 + 4 * HOUR;
    for (let i = 0; i < 20; i++) await recordTelemetry(sql, c, cpu(i), new Date(start + i * MINUTE));
    const runs = await Promise.all([
      rollUpTelemetry(sql, { now: at(start + 2 * HOUR) }),
      rollUpTelemetry(sql, { now: at(start + 2 * HOUR) }),
    ]);
    expect(runs[0]!.heartbeats + runs[1]!.heartbeats).toBe(20);
    expect(await hourly(c, start)).toEqual({ heartbeats: 20, stats: { [USAGE]: [20, 190, 0, 19] } });
    expect(await fleetHour(start)).toEqual({ devices: 1, heartbeats: 20 });
  });

  test("the job and the raw charts take the same values for numbers, and the job the fields the console charts", async () => {
    // The job reads values by asNumber, a raw chart by SQL's telemetry_number: the same rule.
    const values: unknown[] = [
      12.5,
      4,
      0,
      -0.5,
      1e300,
      1e301,
      1e-300,
      1e-320,
      -1e-299,
      " 7 ",
      "\t-3e2\n",
      "\v5\f",
      "2E+3",
      "-1e301",
      "1e999",
      "0",
      "00012",
      "12 cores",
      "+5",
      ".5",
      "5.",
      "0x10",
      "1_000",
      "1e10000",
      "\u00a07",
      "7\u2028",
      "\u30007",
      "\uff11\uff12",
      "\u0661",
      "",
      " ",
      true,
      false,
      null,
      [1],
      { x: 1 },
    ];
    for (const value of values) {
      const [row] = await sql<
        { n: number | null }[]
      >`select telemetry_number(${JSON.stringify(value)}::jsonb) as n`;
      expect([value, asNumber(value) ?? null]).toEqual([value, row!.n]);
    }
    const payloads = [
      cpu(12.5, { cores: 4, spaced: " 7 ", tab: "\t-3e2\n", text: "12 cores", flag: true, none: null }),
      cpu("1e999", { tiny: 1e-320, huge: "-1e301", big: 1e300, zero: "0", exp: "2E+3", list: [1, 2] }),
      { scripts: { disk: { data: { root: { used_pct: 60, "dotted.key": 1, deeper: { x: 1 } } } } } },
      { scripts: { "a.b": { data: { output: { x: 1 } } }, plain: { data: { output: "text" } } } },
      { scripts: { mem: { data: { output: [1, 2], used: 3 } }, bad: 5, arr: [{ data: { x: 1 } }] } },
      { scripts: "none" },
      {},
    ];
    const fields = payloads.map((payload) =>
      numericFields(payload as Record<string, unknown>).map((f) => `${f.path}=${f.value}`),
    );
    expect(fields).toEqual([
      [
        "scripts.cpu.data.output.usage_pct=12.5",
        "scripts.cpu.data.output.cores=4",
        "scripts.cpu.data.output.spaced=7",
        "scripts.cpu.data.output.tab=-300",
      ],
      [
        "scripts.cpu.data.output.big=1e+300",
        "scripts.cpu.data.output.zero=0",
        "scripts.cpu.data.output.exp=2000",
      ],
      ["scripts.disk.data.root.used_pct=60"],
      [],
      ["scripts.mem.data.used=3"],
      [],
      [],
    ]);
    expect(numericFields(payloads[0] as Record<string, unknown>).map((f) => f.label)).toEqual([
      "cpu.usage_pct",
      "cpu.cores",
      "cpu.spaced",
      "cpu.tab",
    ]);
    // A payload full of unchartable values folds in without failing the job.
    const d = crypto.randomUUID();
    const hour = H1 + 7 * HOUR;
    await recordTelemetry(sql, d, payloads[1]!, new Date(hour + MINUTE));
    await rollUpTelemetry(sql, { now: at(hour + HOUR) });
    expect(await hourly(d, hour)).toEqual({
      heartbeats: 1,
      stats: {
        "scripts.cpu.data.output.big": [1, 1e300, 1e300, 1e300],
        "scripts.cpu.data.output.zero": [1, 0, 0, 0],
        "scripts.cpu.data.output.exp": [1, 2000, 2000, 2000],
      },
    });
  });

  test("a window with more device-buckets than the fold holds is read in passes, each row written once", async () => {
    const hour = H1 + 8 * HOUR;
    const devices = Array.from({ length: 12 }, () => crypto.randomUUID());
    for (const [i, device] of devices.entries()) {
      for (const [minute, usage] of [
        [1, i],
        [2, i + 10],
        [7, i + 20],
      ] as const)
        await recordTelemetry(sql, device, cpu(usage), new Date(hour + minute * MINUTE));
    }
    // 24 device-buckets at most 5 at a time: 6 passes over the window, a share of the devices each
    // (empty windows are not read at all).
    const run = await rollUpTelemetry(sql, { now: at(hour + HOUR), maxGroups: 5 });
    expect(run.heartbeats).toBe(36);
    expect(run.passes).toBe(6);
    for (const [i, device] of devices.entries()) {
      expect(await hourly(device, hour)).toEqual({
        heartbeats: 3,
        stats: { [USAGE]: [3, 3 * i + 30, i, i + 20] },
      });
      expect(await sixMinutes(device)).toEqual([
        { bucket: hour, heartbeats: 2, stats: { [USAGE]: [2, 2 * i + 10, i, i + 10] } },
        { bucket: hour + 6 * MINUTE, heartbeats: 1, stats: { [USAGE]: [1, i + 20, i + 20, i + 20] } },
      ]);
    }
    expect(await fleetHour(hour)).toEqual({ devices: 12, heartbeats: 36 });
    // Each written once: 12 hour rows and 24 buckets. Merged in parts, a row is written again.
    expect(run.rowsWritten).toBe(36);
  });

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
    await telemetryRollupJob.run(
      {},
      { config: app.config, database: app.database, logger: createLogger("silent") },
    );
    expect(Date.now() - jobStarted).toBeLessThan(5000);
    const [progress] = await sql<{ ms: number }[]>`
      select extract(epoch from rolled_until)::float8 * 1000 as ms from telemetry_rollup_progress`;
    // (It reads its start a moment after this test's: a second of slack, well short of a run that chases
    // the clock, which the time bound above catches.)
    expect(progress!.ms).toBeLessThanOrEqual(jobStarted - SETTLE_MS + 1000);
    // The raw rows go: the chart still has them, from the rollups.
    await sql`delete from telemetry_events where device_id = ${d}::uuid`;
    const week = await deviceChartData(sql, d, [USAGE], new Date(now - 7 * 86_400_000), new Date(now));
    expect(week.stepSeconds).toBe(3600);
    expect(week.events).toBe(4);
    expect(week.t).toEqual([hour / 1000, hour / 1000 + 3600]);
    expect(week.series).toEqual([[30, 8]]);
    const month = await deviceChartData(sql, d, [USAGE], new Date(now - 30 * 86_400_000), new Date(now));
    expect(month.stepSeconds).toBe(3 * 3600);
    expect(month.events).toBe(4);
    // Three-hour buckets from the range's first whole hour: the two hours share one or not.
    const first = Math.floor((now - 30 * 86_400_000) / HOUR) * HOUR;
    const bucket = (ms: number) => first + Math.floor((ms - first) / (3 * HOUR)) * 3 * HOUR;
    expect(month.series[0]).toEqual(
      bucket(hour) === bucket(hour + HOUR) ? [(10 + 20 + 60 + 8) / 4] : [30, 8],
    );
    // A day's chart reads the 6-minute rollups: the same heartbeats, in their 6-minute buckets.
    const day = await deviceChartData(sql, d, [USAGE], new Date(now - 86_400_000), new Date(now));
    expect(day.stepSeconds).toBe(360);
    expect(day.events).toBe(4);
    expect(day.t).toEqual([hour / 1000, (hour + HOUR) / 1000]);
    expect(day.series).toEqual([[30, 8]]);
    // Six hours still read raw rows (gone here).
    const sixHours = await deviceChartData(sql, d, [USAGE], new Date(now - 6 * HOUR), new Date(now));
    expect(sixHours.events).toBe(0);
    // A heartbeat the job has not folded in yet is on the chart all the same (read raw).
    const latest = Date.now();
    await recordTelemetry(sql, d, cpu(50), new Date(latest));
    const current = await deviceChartData(
      sql,
      d,
      [USAGE],
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
    const chart = await deviceChartData(
      sql,
      d,
      [USAGE, "scripts.cpu.data.output.cores"],
      new Date(from),
      new Date(to),
    );
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
    const chart = await deviceChartData(sql, d, [USAGE], new Date(to - 6 * HOUR), new Date(to));
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
    const sampled = await deviceChartData(sql, d, [USAGE], new Date(from), new Date(to));
    expect(sampled.events).toBe(rows.filter((row) => row.ms >= from).length);
    expect(sampled.t[0]).toBe(from / 1000);
    await sql`update telemetry_rollup_progress set recent_from = ${new Date(now - 50 * HOUR).toISOString()}::timestamptz`;

    // The raw rows the job folded go: the chart has them all the same, from the tier.
    await sql`delete from telemetry_events where device_id = ${d}::uuid and recorded_at < ${watermark}::timestamptz`;
    const day = await deviceChartData(sql, d, [USAGE], new Date(from), new Date(to));
    expect(day.stepSeconds).toBe(360);
    expect(day.events).toBe(rows.length);
    expect(day.t).toEqual(starts.map((ms) => ms / 1000));
    expect(day.series[0]).toEqual(starts.map((ms) => average(expected.get(ms)!)));
    expect(day.series[0]!.at(-1)).toBe(average(expected.get(starts.at(-1)!)!));
  });

  test("the 6-minute tier's days are dropped once they ended two days ago, as whole partitions", async () => {
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    await sql`select daily_partitions_ensure('telemetry_6min', 'bucket', ${day(-6)}::date, ${day(-5)}::date)`;
    const d = crypto.randomUUID();
    // A row in a dropped day's partition, one in the default partition (no partition for its day).
    await sql`insert into telemetry_6min (device_id, bucket, heartbeats, stats) values
      (${d}::uuid, ${`${day(-6)}T01:00:00Z`}::timestamptz, 1, '{}'),
      (${d}::uuid, ${`${day(-20)}T01:00:00Z`}::timestamptz, 1, '{}'),
      (${d}::uuid, date_bin('6 minutes', now() - interval '1 day', 'epoch'), 1, '{}')`;
    const partitions = async () =>
      (
        await sql<{ relname: string }[]>`
        select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'telemetry_6min'::regclass order by 1`
      ).map((r) => r.relname);
    expect(await partitions()).toContain(`telemetry_6min_p${day(-6).replaceAll("-", "")}`);
    expect(await dropExpiredRecentRollups(sql)).toBeGreaterThanOrEqual(2);
    const left = await partitions();
    const days = left.filter((name) => name.startsWith("telemetry_6min_p"));
    expect(days.filter((name) => name < `telemetry_6min_p${day(-2).replaceAll("-", "")}`)).toEqual([]);
    expect(left).toContain(`telemetry_6min_p${day(-1).replaceAll("-", "")}`);
    expect(left).toContain("telemetry_6min_default");
    expect((await sixMinutes(d)).length).toBe(1);
  });

  test("retention drops rollups older than the retention period, never younger than 30 days", async () => {
    const d = crypto.randomUUID();
    const now = Date.now();
    const ages = [45, 35, 20];
    for (const age of ages) {
      const hour = new Date(Math.floor((now - age * 86_400_000) / HOUR) * HOUR).toISOString();
      await sql`insert into telemetry_hourly (device_id, hour, heartbeats, stats) values (${d}::uuid, ${hour}::timestamptz, 1, '{}')`;
      await sql`insert into telemetry_fleet_hourly (hour, devices, heartbeats) values (${hour}::timestamptz, 1, 1)
        on conflict do nothing`;
    }
    const left = async () =>
      (
        await sql<
          { n: number }[]
        >`select count(*)::int as n from telemetry_hourly where device_id = ${d}::uuid`
      )[0]!.n;
    // 7 days asked: 30 kept.
    expect(await dropExpiredRollups(sql, 7, new Date(now))).toBe(4);
    expect(await left()).toBe(1);
    await sql`insert into telemetry_hourly (device_id, hour, heartbeats, stats)
      values (${d}::uuid, ${new Date(now - 50 * 86_400_000).toISOString()}::timestamptz, 1, '{}')`;
    expect(await dropExpiredRollups(sql, 60, new Date(now))).toBe(0);
    expect(await left()).toBe(2);
  });
});
