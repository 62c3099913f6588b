import { describe, expect, test } from "bun:test";
import telemetryPartitionsJob from "../../jobs/telemetry-partitions";
import telemetryRetentionJob from "../../jobs/telemetry-retention";
import {
  dropExpiredTelemetry,
  ensureTelemetryPartitions,
  getTelemetryEvent,
  latestTelemetry,
  listTelemetryEvents,
  listTelemetryPartitions,
  recordTelemetry,
} from "../../modules/telemetry/service";
import { startTestApp } from "../helpers/app";

const app = await startTestApp({ TELEMETRY_RETENTION_DAYS: "30" });
const sql = app.database.sql;
const DAY = 86_400_000;
const jobContext = () => app.services;
const day = (offset: number) => new Date(Date.now() + offset * DAY).toISOString().slice(0, 10);

async function partitionOf(id: string) {
  const [row] = await sql<
    { part: string }[]
  >`select tableoid::regclass::text as part from telemetry_events where id = ${id}`;
  return row?.part;
}

describe("telemetry storage", () => {
  test("daily partitions exist from yesterday to a week ahead, and the job is idempotent", async () => {
    await telemetryPartitionsJob.run({}, jobContext());
    const partitions = await listTelemetryPartitions(sql);
    for (let offset = -1; offset <= 7; offset++) expect(partitions).toContain(day(offset));
    expect(await ensureTelemetryPartitions(sql, 7)).toBe(0);
  });

  test("a row lands in its day's partition; a day without one goes to the default partition and moves in later", async () => {
    const deviceId = crypto.randomUUID();
    const today = await recordTelemetry(sql, deviceId, { n: 1 });
    expect(await partitionOf(today)).toBe(`telemetry_events_p${day(0).replaceAll("-", "")}`);
    const future = new Date(Date.now() + 20 * DAY);
    const later = await recordTelemetry(sql, deviceId, { n: 2 }, future);
    expect(await partitionOf(later)).toBe("telemetry_events_default");
    expect(await ensureTelemetryPartitions(sql, 21)).toBeGreaterThan(0);
    expect(await partitionOf(later)).toBe(
      `telemetry_events_p${future.toISOString().slice(0, 10).replaceAll("-", "")}`,
    );
  });

  test("every partition is vacuumed each 20,000 new rows and frozen at once; a threshold set by hand stays", async () => {
    const options = async (relname: string) => {
      const [row] = await sql<{ options: string[] | null }[]>`
        select reloptions as options from pg_class where relname = ${relname}`;
      return row!.options ?? [];
    };
    const ours = [
      "autovacuum_vacuum_insert_scale_factor=0",
      "autovacuum_vacuum_insert_threshold=20000",
      "autovacuum_freeze_min_age=0",
    ];
    const parts = await sql<{ relname: string }[]>`
      select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'public.telemetry_events'::regclass`;
    expect(parts.length).toBeGreaterThan(8);
    for (const { relname } of parts) expect(await options(relname)).toEqual(ours);

    // A new day's partition gets them too; one an operator tuned keeps its own.
    const tuned = `telemetry_events_p${day(0).replaceAll("-", "")}`;
    await sql.unsafe(`alter table ${tuned} set (autovacuum_vacuum_insert_threshold = 5000)`);
    const farDay = new Date(Date.now() + 40 * DAY).toISOString().slice(0, 10);
    await sql`select telemetry_ensure_partitions(${farDay}::date, ${farDay}::date)`;
    expect(await options(`telemetry_events_p${farDay.replaceAll("-", "")}`)).toEqual(ours);
    expect(await options(tuned)).toContain("autovacuum_vacuum_insert_threshold=5000");
    await sql.unsafe(`alter table ${tuned} set (autovacuum_vacuum_insert_threshold = 20000)`);
  });

  test("retention drops whole partitions older than the retention period and keeps the rest", async () => {
    const deviceId = crypto.randomUUID();
    const old = new Date(Date.now() - 40 * DAY);
    const [created] = await sql<
      { n: number }[]
    >`select telemetry_ensure_partitions(${day(-40)}::date, ${day(-40)}::date) as n`;
    expect(created!.n).toBe(1);
    const oldId = await recordTelemetry(sql, deviceId, { old: true }, old);
    const strayId = await recordTelemetry(sql, deviceId, { stray: true }, new Date(Date.now() - 50 * DAY));
    expect(await partitionOf(strayId)).toBe("telemetry_events_default");
    const recentId = await recordTelemetry(sql, deviceId, { recent: true });
    await telemetryRetentionJob.run({}, jobContext());
    expect(await listTelemetryPartitions(sql)).not.toContain(day(-40));
    expect(await getTelemetryEvent(sql, oldId)).toBeUndefined();
    expect(await getTelemetryEvent(sql, strayId)).toBeUndefined();
    expect((await getTelemetryEvent(sql, recentId))!.payload).toEqual({ recent: true });
  });
});

test("retention keeps the day exactly at the retention period and drops the day before it", async () => {
  const now = new Date();
  const deviceId = crypto.randomUUID();
  await sql`select telemetry_ensure_partitions(${day(-31)}::date, ${day(-30)}::date)`;
  const midday = (offset: number) => new Date(`${day(offset)}T12:00:00Z`);
  const lastKept = await recordTelemetry(sql, deviceId, { age: 30 }, midday(-30));
  const firstDropped = await recordTelemetry(sql, deviceId, { age: 31 }, midday(-31));
  await dropExpiredTelemetry(sql, 30, now);
  const partitions = await listTelemetryPartitions(sql);
  expect(partitions).toContain(day(-30));
  expect(partitions).not.toContain(day(-31));
  expect((await getTelemetryEvent(sql, lastKept))!.payload).toEqual({ age: 30 });
  expect(await getTelemetryEvent(sql, firstDropped)).toBeUndefined();
});

test("retention gives up on a partition a long read holds, instead of queueing every heartbeat behind it", async () => {
  await sql`select telemetry_ensure_partitions(${day(-45)}::date, ${day(-45)}::date)`;
  const reader = await sql.reserve();
  try {
    await reader`begin`;
    await reader`lock table telemetry_events in access share mode`;
    const started = Date.now();
    const outcome = await dropExpiredTelemetry(sql, 30, new Date(), 200).then(
      () => "dropped",
      (error: { code?: string }) => error.code,
    );
    expect(outcome).toBe("55P03"); // lock_not_available
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await listTelemetryPartitions(sql)).toContain(day(-45));
  } finally {
    await reader`rollback`;
    reader.release();
  }
  expect(await dropExpiredTelemetry(sql, 30, new Date(), 200)).toBeGreaterThanOrEqual(1);
  expect(await listTelemetryPartitions(sql)).not.toContain(day(-45));
});

describe("telemetry reads", () => {
  test("latest event, keyset listing", async () => {
    const deviceId = crypto.randomUUID();
    const base = Date.now() - 60 * 60_000;
    const values = [1.5, "2.25", "n/a", 4, null];
    for (const [i, value] of values.entries()) {
      await recordTelemetry(
        sql,
        deviceId,
        { scripts: { pcp: { data: { output: { load_1m: value } } } } },
        new Date(base + i * 60_000),
      );
    }
    await recordTelemetry(sql, crypto.randomUUID(), {
      scripts: { pcp: { data: { output: { load_1m: 99 } } } },
    });
    const latest = await latestTelemetry(sql, deviceId);
    expect(latest!.recordedAt.getTime()).toBe(base + 4 * 60_000);

    const first = await listTelemetryEvents(sql, { deviceId, limit: 3 });
    const second = await listTelemetryEvents(sql, { deviceId, limit: 3, cursor: first.nextCursor });
    expect(first.events.length).toBe(3);
    expect(second.events.length).toBe(2);
    expect(second.nextCursor).toBeUndefined();
    const times = [...first.events, ...second.events].map((e) => e.recordedAt.getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const ranged = await listTelemetryEvents(sql, {
      deviceId,
      from: new Date(base + 60_000),
      to: new Date(base + 3 * 60_000),
    });
    expect(ranged.events.length).toBe(2);
  });

  test("a time-ranged read of one device touches only the partitions of that range", async () => {
    const deviceId = crypto.randomUUID();
    const from = new Date(`${day(0)}T00:00:00Z`);
    const to = new Date(from.getTime() + DAY);
    const plan = await sql`
      explain select * from telemetry_events where device_id = ${deviceId} and recorded_at >= ${from} and recorded_at < ${to}`;
    const text = plan.map((r) => r["QUERY PLAN"]).join("\n");
    expect(text).toContain(`telemetry_events_p${day(0).replaceAll("-", "")}`);
    expect(text).not.toContain(`telemetry_events_p${day(1).replaceAll("-", "")}`);
  });
});
