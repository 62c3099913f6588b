/**
 * The web process's batcher gets HEARTBEAT_BATCH_OVERLAP_AT and _WAIT_MS (docs/device-api.md,
 * **Batches**): while a batch is held (its device row locked by another transaction), fewer waiting
 * heartbeats than the overlap start no batch of their own; they are written together once it ends.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { startTestApp } from "../helpers/app";
import { approvedDevice, countStatements, heartbeatUrl, json, sampleHeartbeat } from "./helpers";

const app = await startTestApp({
  HEARTBEAT_BATCH_CONCURRENCY: "2",
  HEARTBEAT_BATCH_OVERLAP_AT: "3",
  // Far beyond the test's pauses: only the held batch's end lets the waiting ones run.
  HEARTBEAT_BATCH_OVERLAP_WAIT_MS: "30000",
});
const sql = app.database.sql;
let statementsSoFar: () => Promise<number>;

beforeAll(async () => {
  statementsSoFar = await countStatements(app, "telemetry_events", "insert");
});

/** Waits (at most 10 s) until `n` statements of this database wait for a lock. */
async function blockedStatements(n: number) {
  for (let i = 0; i < 200; i++) {
    const [{ waiting }] = await sql<
      { waiting: number }[]
    >`select count(*)::int as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    if (waiting === n) return;
    await Bun.sleep(50);
  }
  throw new Error(`${n} statement(s) never waited for a lock`);
}

const beat = (device: { id: string; token: string }) =>
  app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));

describe("batch overlap", () => {
  test("two heartbeats waiting beside a held batch start none of their own, then share one statement", async () => {
    const [held, first, second] = await Promise.all([1, 2, 3].map(() => approvedDevice(app)));
    const lock = await sql.reserve();
    try {
      await lock`begin`;
      await lock`select 1 from devices where id = ${held!.id} for update`;
      const heldBeat = beat(held!);
      await blockedStatements(1);
      const before = await statementsSoFar();
      const waiting = [beat(first!), beat(second!)];
      await Bun.sleep(300); // time enough for a batch of their own to have written them (none may)
      expect(await statementsSoFar()).toBe(before);
      await lock`rollback`;
      const responses = await Promise.all([heldBeat, ...waiting]);
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
      expect((await statementsSoFar()) - before).toBe(2); // the held batch, then both waiting ones
    } finally {
      lock.release();
    }
  });
});
