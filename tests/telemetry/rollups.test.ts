// Rollups: what the job folds in (per device and 6-minute bucket, per device and hour, per fleet hour),
// windows ending on bucket boundaries, how later windows merge, the settle margin, one runner at a
// time, passes over big windows, the number rule, retention. The charts that read them:
// rollup-charts.test.ts.
import { describe, expect, test } from "bun:test";
import { asNumber, numericFields } from "../../modules/telemetry/numeric-fields";
import {
  dropExpiredRecentRollups,
  dropExpiredRollups,
  rollUpTelemetry,
} from "../../modules/telemetry/rollups";
import { recordTelemetry } from "../../modules/telemetry/service";
import { startTestApp } from "../helpers/app";
import { cpu, HOUR, MINUTE, rollupReads, USAGE } from "./rollup-fixtures";

// The web role only: these tests run the rollup themselves, and a worker's every-minute run of it
// would race them for the watermark row (a run that finds it locked folds nothing).
const app = await startTestApp({ OUTPOST_ROLE: "web" });
const sql = app.database.sql;
const { hourly, sixMinutes, fleetHour } = rollupReads(sql);
// A virtual clock from yesterday 01:00 UTC (its partition exists), moving forward only.
const yesterday = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 86_400_000;
const H1 = yesterday + HOUR;
const at = (ms: number) => new Date(ms);

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
      // A report without an output object (a failed script's): nothing of it is a field.
      { scripts: { disk: { data: { root: { used_pct: 60 }, duration_ms: 4 } } } },
      {
        scripts: {
          disk: { data: { output: { root: { used_pct: 60, "dotted.key": 1, deeper: { x: 1 } } } } },
        },
      },
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
      [],
      ["scripts.disk.data.output.root.used_pct=60"],
      [],
      [],
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
