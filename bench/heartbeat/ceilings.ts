import postgres from "postgres";
import { heartbeatBody, storedPayload } from "./body";

/** Rows per statement of the multi-row ceiling. */
const BATCH_ROWS = 100;

interface CeilingOptions {
  databaseUrl: string;
  devices: { id: string; mac: string }[];
  /** Connections, as many as the server's pool. */
  pool: number;
  /** Concurrent callers, as many as the load had. */
  callers: number;
  durationS: number;
}

/**
 * What PostgreSQL takes of the heartbeat's telemetry rows without the API in front: one INSERT per
 * row with a heartbeat's commit mode (asynchronous) and durable, then one multi-row INSERT per
 * BATCH_ROWS rows (how far the API could go if it batched perfectly). Rows per second each.
 */
export async function measureCeilings({ databaseUrl, devices, pool, callers, durationS }: CeilingOptions) {
  const sql = postgres(databaseUrl, { max: pool, onnotice: () => {} });
  let next = 0;
  const row = () => {
    const device = devices[next++ % devices.length]!;
    const payload = storedPayload(heartbeatBody(device.mac, next));
    return { id: Bun.randomUUIDv7(), device_id: device.id, payload };
  };
  /** Rows per second of `callers` loops running `insert` for durationS after a second's warm-up. */
  const rate = async (loops: number, rowsPerCall: number, insert: () => Promise<unknown>) => {
    let stop = false;
    let inserted = 0;
    const loop = async () => {
      while (!stop) {
        await insert();
        inserted += rowsPerCall;
      }
    };
    const running = Array.from({ length: loops }, loop);
    await Bun.sleep(1000);
    inserted = 0;
    const started = performance.now();
    await Bun.sleep(durationS * 1000);
    const result = inserted / ((performance.now() - started) / 1000);
    stop = true;
    await Promise.all(running);
    return result;
  };
  try {
    // The same commit mode as a heartbeat that delivers no command.
    const ceilingRate = await rate(callers, 1, () => {
      const r = row();
      return sql`insert into telemetry_events (id, device_id, recorded_at, payload)
        select ${r.id}::uuid, ${r.device_id}::uuid, now(), ${r.payload}::json
        from (select set_config('synchronous_commit', 'off', true)) s`;
    });
    const durableCeilingRate = await rate(callers, 1, () => {
      const r = row();
      return sql`insert into telemetry_events (id, device_id, recorded_at, payload)
        values (${r.id}::uuid, ${r.device_id}::uuid, now(), ${r.payload}::json)`;
    });
    const batchCeilingRate = await rate(Math.min(callers, pool), BATCH_ROWS, () => {
      const rows = Array.from({ length: BATCH_ROWS }, row);
      return sql.begin(async (tx) => {
        await tx`select set_config('synchronous_commit', 'off', true)`;
        await tx`insert into telemetry_events (id, device_id, recorded_at, payload)
          select u.id, u.device_id, now(), u.payload::json
          from unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.device_id)}::uuid[],
            ${rows.map((r) => r.payload)}::text[]) as u(id, device_id, payload)`;
      });
    });
    return { BATCH_ROWS, ceilingRate, durableCeilingRate, batchCeilingRate };
  } finally {
    await sql.end({ timeout: 5 });
  }
}
