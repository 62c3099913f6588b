// The durable-evaluation promise with real processes: a graphile-worker process (`./outpost start`, role
// worker) evaluating a long backlog is SIGKILLed mid-run; a second worker process finishes the job. Every
// breach becomes exactly one alert: nothing the killed run had not committed is lost, nothing is doubled.
import { describe, expect, test } from "bun:test";
import { createRule } from "../../modules/alerts/rules";
import { startTestApp } from "../helpers/app";
import { startOutpostProcess } from "../helpers/process";
import { tempDirs } from "../helpers/temp";
import { sensorDevice, sensorPayload } from "./helpers";

const DEVICES = 40;
const EVENTS_PER_DEVICE = 2500; // 100,000 events: 50 batches of 2,000
const app = await startTestApp({ OUTPOST_ROLE: "web" });
const sql = app.database.sql;

async function alertCount(): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from alerts where type = 'threshold'`;
  return row!.n;
}

const dataDir = tempDirs("outpost-worker-kill-");

function worker() {
  return startOutpostProcess({
    DATABASE_URL: app.database.url,
    DATA_DIR: dataDir(),
    SECRET_KEY: app.config.secretKey,
    OUTPOST_ROLE: "worker",
  });
}

const wake = () =>
  sql`select graphile_worker.add_job('alerts_evaluate', '{}'::json, job_key => 'alerts_evaluate', max_attempts => 10)`;

describe("alert evaluation survives a killed worker process", () => {
  test("SIGKILL mid-backlog, a second worker finishes: one alert per breach, none missed", async () => {
    const devices = [];
    for (let i = 0; i < DEVICES; i++) devices.push(await sensorDevice(app, "ev-worker-kill"));
    await createRule(sql, {
      name: "Worker kill",
      product_name: "ev-worker-kill",
      condition_field: "sensor.temp",
      operator: ">",
      threshold_value: "50",
    });
    // The backlog: every device reports 20 most of the time and 99 exactly once, at a different place in
    // the stream for each device. Written straight into the table (UUIDv7 ids in time order, as the
    // heartbeat writes them), a minute old, so the evaluator reads it in order, batch after batch.
    const ids = devices.map((d) => d.id);
    // What the server stores for the agent's heartbeats reporting 99 and 20 (one device's; the device
    // part of a payload plays no role in evaluation).
    const hot = JSON.stringify(await sensorPayload(devices[0]!, { temp: 99 }));
    const cold = JSON.stringify(await sensorPayload(devices[0]!, { temp: 20 }));
    await sql`insert into alert_evaluation_cursor (id, recorded_at, event_id)
      values (1, now() - interval '5 minutes', '00000000-0000-0000-0000-000000000000')
      on conflict (id) do update set recorded_at = excluded.recorded_at, event_id = excluded.event_id`;
    await sql`
      insert into telemetry_events (id, device_id, recorded_at, payload)
      select uuidv7(- interval '60 seconds'), (${ids}::uuid[])[1 + (n % ${DEVICES})], now() - interval '60 seconds',
        case when n / ${DEVICES} = (n % ${DEVICES}) * ${Math.floor(EVENTS_PER_DEVICE / DEVICES)}
          then ${hot}::json else ${cold}::json end
      from generate_series(0, ${DEVICES * EVENTS_PER_DEVICE - 1}) as n
      order by n`;

    const first = await worker();
    await wake();
    // Kill it once some alerts are committed and others are not yet.
    const deadline = Date.now() + 60_000;
    let seen = 0;
    for (let i = 0; i < 6000 && Date.now() < deadline; i++) {
      seen = await alertCount();
      if (seen > 0) break;
      await Bun.sleep(10);
    }
    first.process.kill("SIGKILL");
    await first.process.exited;
    const atKill = await alertCount();
    expect(seen).toBeGreaterThan(0);
    expect(atKill).toBeLessThan(DEVICES); // the run was really cut short

    const second = await worker();
    await wake(); // the next heartbeat's wake-up (the killed run's job stays locked by the dead worker)
    const finished = Date.now() + 60_000;
    while ((await alertCount()) < DEVICES && Date.now() < finished) await Bun.sleep(200);
    await Bun.sleep(1000); // anything doubled would show now
    const perDevice = await sql<{ device_id: string; n: number }[]>`
      select device_id, count(*)::int as n from alerts where type = 'threshold' group by device_id`;
    expect(perDevice.length).toBe(DEVICES);
    expect(perDevice.every((r) => r.n === 1)).toBe(true);
    expect(new Set(perDevice.map((r) => r.device_id))).toEqual(new Set(ids));
    await second.interrupt();
  }, 150_000);
});
