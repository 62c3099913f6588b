import postgres from "postgres";
import { heartbeatBody, storedPayload } from "./body";
import { cpuSeconds, databaseCounters, type MachineShares, machineCpu, machineShares } from "./probes";

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
  /** Seconds each ceiling runs before it is measured, as long as the load's warm-up. */
  warmupS: number;
  /** The postmaster, to measure PostgreSQL's CPU per row (undefined: not measured). */
  postgresPid: number | undefined;
}

/** A ceiling's rate and what each of its rows cost in WAL while it was measured. */
export interface Ceiling {
  rowsPerSecond: number;
  walKbPerRow: number;
  fullPageImagesPerRow: number;
  /** CPU per row: PostgreSQL's (NaN when not measured) and the inserting client's (this process). */
  cpuMsPerRow: { postgres: number; client: number };
  /** How busy the machine was while it was measured. */
  machine: MachineShares;
}

/**
 * What PostgreSQL takes of the heartbeat's telemetry rows without the API in front: one INSERT per
 * row with a heartbeat's commit mode (asynchronous) and durable, then one multi-row INSERT per
 * BATCH_ROWS rows (how far the API could go if it batched perfectly); and the heartbeat's device row
 * updated BATCH_ROWS a statement (`deviceRows`, for the floor: floor.ts).
 *
 * Each starts as the load did: right after a checkpoint, visiting the devices in the load's order. So
 * each pays the same full-page images for the first change of a page since the checkpoint (at 10 M
 * seeded rows most of PostgreSQL's work) instead of finding the pages the load had already logged.
 */
export async function measureCeilings({
  databaseUrl,
  devices,
  pool,
  callers,
  durationS,
  warmupS,
  postgresPid,
}: CeilingOptions) {
  const postgresCpu = () => (postgresPid ? cpuSeconds(postgresPid, true) : Number.NaN);
  const sql = postgres(databaseUrl, { max: pool, onnotice: () => {} });
  let next = 0;
  const row = () => {
    const device = devices[next++ % devices.length]!;
    const payload = storedPayload(heartbeatBody(device.mac, next));
    return { id: Bun.randomUUIDv7(), device_id: device.id, payload };
  };
  /** `loops` callers running `insert` for durationS after the warm-up, from a checkpoint. */
  const rate = async (
    loops: number,
    rowsPerCall: number,
    insert: () => Promise<unknown>,
  ): Promise<Ceiling> => {
    await sql`checkpoint`;
    next = 0;
    let stop = false;
    let inserted = 0;
    const loop = async () => {
      while (!stop) {
        await insert();
        inserted += rowsPerCall;
      }
    };
    const running = Array.from({ length: loops }, loop);
    await Bun.sleep(warmupS * 1000);
    const walBefore = await databaseCounters(sql);
    inserted = 0;
    const started = performance.now();
    const postgresBefore = postgresCpu();
    const clientBefore = process.cpuUsage();
    const machineBefore = machineCpu();
    await Bun.sleep(durationS * 1000);
    const rows = inserted;
    const rowsPerSecond = rows / ((performance.now() - started) / 1000);
    const client = process.cpuUsage(clientBefore);
    const machine = machineShares(machineBefore, machineCpu());
    const postgresSeconds = postgresCpu() - postgresBefore;
    const walAfter = await databaseCounters(sql);
    stop = true;
    await Promise.all(running);
    return {
      rowsPerSecond,
      walKbPerRow: (walAfter.walBytes - walBefore.walBytes) / rows / 1024,
      fullPageImagesPerRow: (walAfter.walFpi - walBefore.walFpi) / rows,
      cpuMsPerRow: {
        postgres: (1000 * postgresSeconds) / rows,
        client: (client.user + client.system) / 1000 / rows,
      },
      machine,
    };
  };
  try {
    // The same commit mode as a heartbeat that delivers no command.
    const single = await rate(callers, 1, () => {
      const r = row();
      return sql`insert into telemetry_events (id, device_id, recorded_at, payload)
        select ${r.id}::uuid, ${r.device_id}::uuid, now(), ${r.payload}::json
        from (select set_config('synchronous_commit', 'off', true)) s`;
    });
    const durable = await rate(callers, 1, () => {
      const r = row();
      return sql`insert into telemetry_events (id, device_id, recorded_at, payload)
        values (${r.id}::uuid, ${r.device_id}::uuid, now(), ${r.payload}::json)`;
    });
    const multiRow = await rate(Math.min(callers, pool), BATCH_ROWS, () => {
      const rows = Array.from({ length: BATCH_ROWS }, row);
      return sql.begin(async (tx) => {
        await tx`select set_config('synchronous_commit', 'off', true)`;
        await tx`insert into telemetry_events (id, device_id, recorded_at, payload)
          select u.id, u.device_id, now(), u.payload::json
          from unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.device_id)}::uuid[],
            ${rows.map((r) => r.payload)}::text[]) as u(id, device_id, payload)`;
      });
    });
    // The heartbeat's other row at the same price: its device's last_seen_at, BATCH_ROWS a statement.
    const deviceRows = await rate(Math.min(callers, pool), BATCH_ROWS, () => {
      const ids = Array.from({ length: BATCH_ROWS }, () => devices[next++ % devices.length]!.id);
      return sql.begin(async (tx) => {
        await tx`select set_config('synchronous_commit', 'off', true)`;
        await tx`update devices d set last_seen_at = now() from unnest(${ids}::uuid[]) as u(id) where d.id = u.id`;
      });
    });
    return { BATCH_ROWS, single, durable, multiRow, deviceRows };
  } finally {
    await sql.end({ timeout: 5 });
  }
}
