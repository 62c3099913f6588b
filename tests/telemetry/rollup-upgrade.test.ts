// The upgrade that adds the 6-minute rollups (migration 0023) on a database that has rolled up
// telemetry before: where the tier starts being complete, its partitions, and telemetry_events'
// partition maintenance still working through the shared functions.
import { expect, test } from "bun:test";
import { applyMigrations } from "../../modules/platform/database";
import { createTestDatabase } from "../helpers/database";

const database = await createTestDatabase({ migratedThrough: 22 });

test("an install that rolled up telemetry before 0023: the tier is complete from the job's next bucket", async () => {
  const sql = database.sql;
  // The job's watermark between two 6-minute boundaries, as a job that folded to "now" left it.
  await sql`insert into telemetry_rollup_progress (rolled_until) values ('2026-11-27T10:03:27.5Z')`;

  await applyMigrations(database);
  const [progress] = await sql<{ rolled_until: string; recent_from: string }[]>`
    select to_char(rolled_until at time zone 'UTC', 'HH24:MI:SS.MS') as rolled_until,
      to_char(recent_from at time zone 'UTC', 'HH24:MI:SS.MS') as recent_from
    from telemetry_rollup_progress`;
  expect(progress).toEqual({ rolled_until: "10:03:27.500", recent_from: "10:06:00.000" });

  // Partitions from two days ago to a week ahead, and the default one.
  const partitions = (
    await sql<{ relname: string }[]>`
      select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'telemetry_6min'::regclass order by 1`
  ).map((row) => row.relname);
  const day = (offset: number) =>
    `telemetry_6min_p${new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10).replaceAll("-", "")}`;
  expect(partitions).toEqual(expect.arrayContaining([day(-2), day(0), day(7), "telemetry_6min_default"]));

  // telemetry_events' own maintenance now goes through the shared functions: a row that landed in
  // the default partition moves into its day's partition when that is created, and goes with it.
  const old = new Date(Date.now() - 60 * 86_400_000).toISOString();
  await sql`insert into telemetry_events (id, device_id, recorded_at, payload)
    values (gen_random_uuid(), gen_random_uuid(), ${old}::timestamptz, '{}')`;
  const oldDay = old.slice(0, 10);
  expect((await sql`select telemetry_ensure_partitions(${oldDay}::date, ${oldDay}::date) as n`)[0]!.n).toBe(
    1,
  );
  const [moved] = await sql<{ n: number }[]>`
    select count(*)::int as n from ${sql(`telemetry_events_p${oldDay.replaceAll("-", "")}`)}`;
  expect(moved!.n).toBe(1);
  expect((await sql`select telemetry_drop_partitions_before(${oldDay}::date + 1) as n`)[0]!.n).toBe(1);
  expect((await sql`select count(*)::int as n from telemetry_events`)[0]!.n).toBe(0);
});
