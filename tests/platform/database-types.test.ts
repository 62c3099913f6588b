import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { jobRuns } from "../../modules/jobs/schema";
import { createTestDatabase } from "../helpers/database";

const database = await createTestDatabase();
const { sql, db } = database;

describe("the app's database client (connectDatabase)", () => {
  test("raw templates read timestamptz as a Date, to the millisecond", async () => {
    const [row] = await sql<{ at: Date; none: Date | null }[]>`
      select '2026-01-02 03:04:05.678901+00'::timestamptz as at, null::timestamptz as none`;
    expect(row!.at).toBeInstanceOf(Date);
    expect(row!.at.toISOString()).toBe("2026-01-02T03:04:05.678Z");
    expect(row!.none).toBeNull();
  });

  test("the session time zone does not change the instant read", async () => {
    const rows = await sql.begin(async (tx) => {
      await tx`set local time zone 'Asia/Kolkata'`;
      return tx<{ at: Date }[]>`select '2026-01-02 03:04:05Z'::timestamptz as at`;
    });
    expect(rows[0]!.at.toISOString()).toBe("2026-01-02T03:04:05.000Z");
  });

  test("timestamp without time zone reads as UTC; infinity as the furthest Dates", async () => {
    const [row] = await sql<{ local: Date; future: Date; past: Date }[]>`
      select '2026-01-02 03:04:05.5'::timestamp as local,
             'infinity'::timestamptz as future, '-infinity'::timestamptz as past`;
    expect(row!.local.toISOString()).toBe("2026-01-02T03:04:05.500Z");
    expect(row!.future.getTime()).toBe(8.64e15);
    expect(row!.past.getTime()).toBe(-8.64e15);
  });

  test("arrays of timestamps read as Dates; date columns stay calendar-day text", async () => {
    const [row] = await sql<{ ats: Date[]; day: string }[]>`
      select array['2026-01-02T00:00:00Z', '2026-01-03T00:00:00Z']::timestamptz[] as ats,
             '2026-01-02'::date as day`;
    expect(row!.ats.map((at) => at.toISOString())).toEqual([
      "2026-01-02T00:00:00.000Z",
      "2026-01-03T00:00:00.000Z",
    ]);
    expect(row!.day).toBe("2026-01-02");
  });

  test("a Date is a valid parameter and round-trips exactly", async () => {
    const at = new Date("2026-05-06T07:08:09.123Z");
    const [row] = await sql<{ same: boolean; back: Date }[]>`
      select ${at}::timestamptz = '2026-05-06T07:08:09.123Z'::timestamptz as same, ${at}::timestamptz as back`;
    expect(row!.same).toBe(true);
    expect(row!.back.getTime()).toBe(at.getTime());
  });

  test("drizzle on the same client still reads and writes its timestamp columns as Dates", async () => {
    const startedAt = new Date("2026-03-04T05:06:07.890Z");
    const [inserted] = await db
      .insert(jobRuns)
      .values({ jobId: "1", taskIdentifier: "probe", attempt: 1, status: "running", startedAt })
      .returning();
    expect(inserted!.startedAt).toBeInstanceOf(Date);
    expect(inserted!.startedAt.getTime()).toBe(startedAt.getTime());
    const [read] = await db.select().from(jobRuns).where(eq(jobRuns.id, inserted!.id));
    expect(read!.startedAt.getTime()).toBe(startedAt.getTime());
    expect(read!.finishedAt).toBeNull();
    const [raw] = await sql<
      { started_at: Date }[]
    >`select started_at from job_runs where id = ${inserted!.id}`;
    expect(raw!.started_at.getTime()).toBe(startedAt.getTime());
  });
});
