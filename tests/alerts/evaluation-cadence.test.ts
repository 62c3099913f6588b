// How often alert evaluation reads the telemetry stream (jobs/alerts-evaluate.ts): a thin stream every
// 2.5 s (a pass costs the same whatever it reads: at rest, passes every second were most of what
// Outpost did), telemetry still inside the settle margin once it settles, and nothing new not at all.
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import evaluateJob from "../../jobs/alerts-evaluate";
import { EVALUATE_TASK, evaluateAlerts, SETTLE_MS } from "../../modules/alerts/evaluation";
import { alertEvaluationWake, WAKE_EVERY_MS } from "../../modules/alerts/wake";
import { startTestApp } from "../helpers/app";
import { TestClock } from "../helpers/clock";
import { type SensorDevice, sensorDevice, sensorPayload } from "./helpers";

// Web role: no worker takes the job, the test runs each pass itself.
const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());
const sql = app.database.sql;

/** When the next pass is due (ms since the epoch; undefined: none scheduled). */
async function nextPassAt(): Promise<number | undefined> {
  const [job] = await sql<
    { run_at: Date }[]
  >`select run_at from graphile_worker.jobs where key = ${EVALUATE_TASK}`;
  return job?.run_at.getTime();
}

/** Runs one job; the next pass is due `pauseMs` after some moment inside the run (the machine may be slow). */
async function expectNextPassAfter(pauseMs: number) {
  const before = Date.now();
  await runPass();
  const after = Date.now();
  const due = await nextPassAt();
  expect(due).toBeGreaterThanOrEqual(before + pauseMs);
  expect(due).toBeLessThanOrEqual(after + pauseMs);
  return due!;
}

/** Telemetry from the agent's own heartbeat code, as if it had arrived `secondsAgo` (its id's time). */
async function arrived(device: SensorDevice, secondsAgo: number, count = 1) {
  const payload = await sensorPayload(device, { temp: 21 });
  for (let i = 0; i < count; i++) {
    const at = Date.now() - secondsAgo * 1000;
    await sql`insert into telemetry_events (id, device_id, recorded_at, payload)
      values (${Bun.randomUUIDv7("hex", at)}::uuid, ${device.id}::uuid, ${new Date(at).toISOString()}::timestamptz,
        ${JSON.stringify(payload)}::jsonb)`;
  }
}

/** The cursor a minute back, with nothing after it but what a test adds (so events can arrive "30 s ago"). */
async function cursorAMinuteBack() {
  await sql`delete from telemetry_events where id > ${Bun.randomUUIDv7("hex", Date.now() - 60_000)}::uuid`;
  await sql`update alert_evaluation_cursor set recorded_at = now() - interval '1 minute',
    event_id = ${Bun.randomUUIDv7("hex", Date.now() - 60_000)}::uuid`;
}

const runPass = () => evaluateJob.run({}, app.services);
let device: SensorDevice;

beforeEach(async () => {
  device ??= await sensorDevice(app, "cadence");
  // Everything so far is read, and no pass is pending.
  await evaluateAlerts(sql, app.config, { settleMs: -5000 });
  await sql`select graphile_worker.remove_job(${EVALUATE_TASK})`;
});

describe("alert evaluation's cadence", () => {
  test("a thin stream: the next pass in 2.5 s, and a heartbeat's wake-up does not pull it forward", async () => {
    await cursorAMinuteBack();
    await arrived(device, 30, 3);
    const due = await expectNextPassAfter(2_500);
    // A heartbeat's wake-up (modules/alerts/wake.ts: the job key, preserve_run_at) keeps that
    // time, even one asking for sooner.
    await sql`select graphile_worker.add_job(${EVALUATE_TASK}, '{}'::json, run_at => now() + interval '0.5 seconds',
      job_key => ${EVALUATE_TASK}, job_key_mode => 'preserve_run_at')`;
    expect(await nextPassAt()).toBe(due);
  });

  test("telemetry inside the settle margin: nothing read yet, a pass when it has settled", async () => {
    await arrived(device, 0);
    const result = await evaluateAlerts(sql, app.config);
    expect(result).toMatchObject({ events: 0, unsettled: true });
    await expectNextPassAfter(SETTLE_MS);
  });

  test("nothing new: no pass is scheduled (the next heartbeat wakes evaluation)", async () => {
    expect(await evaluateAlerts(sql, app.config)).toMatchObject({ events: 0, unsettled: false });
    await runPass();
    expect(await nextPassAt()).toBeUndefined();
  });

  test("a busy stream is followed within the job: a second look a second later", async () => {
    await cursorAMinuteBack();
    await arrived(device, 30, 60);
    const started = Date.now();
    await runPass();
    // Sixty events are a busy pass: the job looked again a second later (found nothing, so no next pass).
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(await nextPassAt()).toBeUndefined();
  });
});

describe("the heartbeats' wake-up", () => {
  /** The pending pass's time, once the wake-up's insert (not awaited by the heartbeat) has landed. */
  /** The database's now, not the app clock's (which the test moved): due `delayMs` after it. */
  function expectRunAt(due: number | undefined, asked: number, delayMs: number) {
    expect(due).toBeGreaterThanOrEqual(asked + delayMs - 5);
    expect(due).toBeLessThanOrEqual(Date.now() + delayMs);
  }

  async function wokenAt(): Promise<number | undefined> {
    for (let i = 0; i < 100; i++) {
      const at = await nextPassAt();
      if (at !== undefined) return at;
      await Bun.sleep(20);
    }
    return undefined;
  }

  test("at most one every 5 s, and a heartbeat inside them is followed by a wake-up at their end", async () => {
    await sql`select graphile_worker.remove_job(${EVALUATE_TASK})`;
    const clock = new TestClock({ frozen: true });
    const wake = alertEvaluationWake(sql, clock);
    const asked = Date.now();
    wake();
    expectRunAt(await wokenAt(), asked, SETTLE_MS + 100);
    await sql`select graphile_worker.remove_job(${EVALUATE_TASK})`;

    await clock.advance(1_000);
    wake(); // the last heartbeat for a while: not dropped
    wake();
    await Bun.sleep(100);
    expect(await nextPassAt()).toBeUndefined();
    await clock.advance(WAKE_EVERY_MS - 1_000 - 1);
    expect(await nextPassAt()).toBeUndefined();
    const deferredAt = Date.now();
    await clock.advance(1);
    expectRunAt(await wokenAt(), deferredAt, SETTLE_MS + 100);
  });
});
