// The rollout driver against a real database: waves, concurrency, the failure threshold, pause,
// resume, cancel, the deadline and offline devices, state actions, and no device acted on twice.
import { describe, expect, test } from "bun:test";
import { claimCommands, recordCommandResults } from "../../modules/commands/service";
import { controlRollout, createRollout, getRollout } from "../../modules/rollouts/service";
import { createTestDatabase } from "../helpers/database";
import {
  answer,
  commandsPerDevice,
  drive,
  insertDevices,
  OPTIONS,
  rolloutRow,
  script,
  states,
} from "./helpers";

const database = await createTestDatabase();
const context = (now = new Date()) => ({ createdBy: "ops@example.test", now, ...OPTIONS });
const install = (name: string) => ({ type: "install_script" as const, script: script(name) });

describe("rollout driver", () => {
  test("a canary wave, then the rest, at most K devices in flight; completed when all answered", async () => {
    const ids = await insertDevices(database, 6);
    const id = await createRollout(
      database,
      { action: install("wave"), target: { ids }, canary_count: 2, concurrency: 3 },
      context(),
    );
    expect(await drive(database, id)).toBe("again");
    const sent = await states(database, id);
    // The canary: its two devices only, though three may be in flight.
    expect(Object.values(sent).filter((s) => s === "queued").length).toBe(6);
    expect((await commandsPerDevice(database)).size).toBe(2);
    // The rest waits until the canary finished.
    for (const device of ids.slice(0, 1)) await answer(database, device);
    await drive(database, id);
    expect((await commandsPerDevice(database)).size).toBe(2);
    await answer(database, ids[1]!);
    await drive(database, id);
    expect((await rolloutRow(database, id)).current_wave).toBe(2);
    await drive(database, id);
    expect((await commandsPerDevice(database)).size).toBe(5); // 2 done + 3 in flight
    for (let round = 0; round < 3; round++) {
      for (const device of ids) await answer(database, device);
      await drive(database, id);
    }
    const rollout = await getRollout(database.sql, id);
    expect(rollout.status).toBe("completed");
    expect(rollout.counts).toEqual({ queued: 0, delivered: 0, succeeded: 6, failed: 0, skipped: 0 });
    expect([...(await commandsPerDevice(database)).values()].every((n) => n === 1)).toBe(true);
  });

  test("a wave whose failures pass the threshold pauses; resume accepts them and completes", async () => {
    const ids = await insertDevices(database, 5);
    const id = await createRollout(
      database,
      {
        action: install("threshold"),
        target: { ids },
        canary_count: 2,
        concurrency: 10,
        failure_threshold: 20,
      },
      context(),
    );
    await drive(database, id);
    await answer(database, ids[0]!, true);
    await answer(database, ids[1]!);
    await drive(database, id);
    expect(await rolloutRow(database, id)).toMatchObject({
      status: "paused",
      pause_reason: "threshold",
      current_wave: 1,
    });
    expect((await states(database, id))[ids[0]!]).toBe("failed");
    // Paused: nothing more is sent.
    await drive(database, id);
    expect((await states(database, id))[ids[2]!]).toBe("queued");
    expect(await answer(database, ids[2]!)).toBe(0);
    await controlRollout(database, id, "resume", new Date());
    await drive(database, id);
    await drive(database, id);
    for (const device of ids.slice(2)) expect(await answer(database, device)).toBe(1);
    await drive(database, id);
    await drive(database, id);
    const rollout = await getRollout(database.sql, id);
    expect(rollout.status).toBe("completed");
    expect(rollout.counts).toMatchObject({ succeeded: 4, failed: 1 });
    const [failed] = await database.sql<{ error: string }[]>`
      select error from rollout_targets where rollout_id = ${id}::uuid and state = 'failed'`;
    expect(failed!.error).toBe("script exited 1");
  });

  test("an operator pauses and resumes; cancel skips devices not reached and withdraws their commands", async () => {
    const ids = await insertDevices(database, 4);
    const id = await createRollout(
      database,
      { action: install("cancel"), target: { ids }, concurrency: 2 },
      context(),
    );
    await controlRollout(database, id, "pause", new Date());
    await drive(database, id);
    expect((await commandsPerDevice(database)).has(ids[0]!)).toBe(false);
    await expect(controlRollout(database, id, "pause", new Date())).rejects.toMatchObject({ status: 409 });
    await controlRollout(database, id, "resume", new Date());
    await drive(database, id);
    await answer(database, ids[0]!); // one answered; the other's command still queued (offline)
    await controlRollout(database, id, "cancel", new Date());
    await drive(database, id);
    const rollout = await getRollout(database.sql, id);
    expect(rollout.status).toBe("cancelled");
    expect(rollout.finished_at).not.toBeNull();
    expect(rollout.counts).toMatchObject({ succeeded: 1, skipped: 3 });
    // The withdrawn command never reaches the device; its device was skipped by the cancel itself.
    expect(await answer(database, ids[1]!)).toBe(0);
    const [skipped] = await database.sql<{ error: string }[]>`
      select error from rollout_targets where rollout_id = ${id}::uuid and device_id = ${ids[1]!}::uuid`;
    expect(skipped!.error).toBe("Cancelled");
    await expect(controlRollout(database, id, "resume", new Date())).rejects.toMatchObject({ status: 409 });
  });

  test("an offline device's command waits; a device back in time answers, the rest are skipped at the deadline", async () => {
    const ids = await insertDevices(database, 3);
    const now = new Date();
    const deadline = new Date(now.getTime() + 3_600_000);
    const id = await createRollout(
      database,
      { action: install("offline"), target: { ids }, concurrency: 1, deadline: deadline.toISOString() },
      context(now),
    );
    await drive(database, id, now);
    await answer(database, ids[0]!); // came back and answered
    await drive(database, id, now);
    expect((await states(database, id))[ids[1]!]).toBe("queued"); // still waiting in its queue
    await drive(database, id, new Date(deadline.getTime() + 1));
    const rollout = await getRollout(database.sql, id);
    expect(rollout.status).toBe("completed");
    expect(rollout.counts).toMatchObject({ succeeded: 1, skipped: 2 });
    const errors = await database.sql<{ error: string }[]>`
      select error from rollout_targets where rollout_id = ${id}::uuid and state = 'skipped' order by position`;
    expect(errors.map((e) => e.error)).toEqual([
      "Offline until the deadline",
      "Not started before the deadline",
    ]);
    expect(await answer(database, ids[1]!)).toBe(0); // its command was withdrawn
  });

  test("after cancel, a command the agent already took still reports; a paused rollout ends at its deadline", async () => {
    const ids = await insertDevices(database, 2);
    const now = new Date();
    const id = await createRollout(
      database,
      { action: install("late"), target: { ids }, concurrency: 1 },
      context(now),
    );
    await drive(database, id, now);
    const [command] = await claimCommands(database.sql, ids[0]!); // delivered, no result yet
    await controlRollout(database, id, "cancel", now);
    expect(await drive(database, id, now)).toBe("again"); // waits for the delivered one
    expect((await getRollout(database.sql, id)).counts).toMatchObject({ delivered: 1, skipped: 1 });
    await recordCommandResults(database.sql, ids[0]!, [{ command_id: command!.command_id, status: "OK" }]);
    expect(await drive(database, id, now)).toBe("done");
    expect(await getRollout(database.sql, id)).toMatchObject({
      status: "cancelled",
      counts: { succeeded: 1, skipped: 1 },
    });

    const deadline = new Date(now.getTime() + 60_000);
    const paused = await createRollout(
      database,
      { action: { type: "revoke" }, target: { ids }, deadline: deadline.toISOString() },
      context(now),
    );
    await controlRollout(database, paused, "pause", now);
    expect(await drive(database, paused, now)).toBe("again");
    expect(await drive(database, paused, deadline)).toBe("done");
    expect(await getRollout(database.sql, paused)).toMatchObject({
      status: "completed",
      counts: { skipped: 2 },
    });
  });

  test("revoke and remove_script: a device in the wrong state is skipped, a script removed by command", async () => {
    const [approved, pending] = [
      await insertDevices(database, 1),
      await insertDevices(database, 1, "pending"),
    ];
    const revoke = await createRollout(
      database,
      { action: { type: "revoke" }, target: { ids: [...approved, ...pending] } },
      context(),
    );
    expect(await drive(database, revoke)).toBe("done");
    const rows = await database.sql<{ device_id: string; state: string; error: string | null }[]>`
      select device_id::text as device_id, state, error from rollout_targets where rollout_id = ${revoke}::uuid
      order by position`;
    expect(rows.map((r) => r.state)).toEqual(["succeeded", "skipped"]);
    expect(rows[1]!.error).toContain("Only an approved device can be revoked");
    const [device] = await database.sql<{ approval_status: string }[]>`
      select approval_status from devices where id = ${approved[0]!}::uuid`;
    expect(device!.approval_status).toBe("rejected");

    const remove = await createRollout(
      database,
      { action: { type: "remove_script", name: "old" }, target: { ids: pending } },
      context(),
    );
    await drive(database, remove);
    const [sent] = await claimCommands(database.sql, pending[0]!);
    expect(sent).toMatchObject({ type: "remove_script", args: ["old"] });
  });

  test("state actions apply at once, through their features: tags, approvals", async () => {
    const pending = await insertDevices(database, 3, "pending");
    const approved = await insertDevices(database, 1);
    const tag = await createRollout(
      database,
      {
        action: { type: "add_tag", tag: { key: "ring", value: "1" } },
        target: { ids: pending },
        concurrency: 2,
      },
      context(),
    );
    expect(await drive(database, tag)).toBe("done");
    expect((await getRollout(database.sql, tag)).counts.succeeded).toBe(3);
    const [tagged] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from device_tags where key = 'ring' and device_id = any(${pending}::uuid[])`;
    expect(tagged!.n).toBe(3);
    const approve = await createRollout(
      database,
      { action: { type: "approve" }, target: { ids: [...pending, ...approved] } },
      context(),
    );
    expect(await drive(database, approve)).toBe("done");
    expect((await getRollout(database.sql, approve)).counts).toMatchObject({ succeeded: 3, skipped: 1 });
  });

  test("drivers running at once never send a device two commands (a killed worker: worker-restart.test.ts)", async () => {
    const ids = await insertDevices(database, 12);
    const id = await createRollout(
      database,
      { action: install("twice"), target: { ids }, concurrency: 4 },
      context(),
    );
    // Five drivers at once (five workers): one acts, the others find it busy.
    const results = await Promise.all(Array.from({ length: 5 }, () => drive(database, id)));
    expect(results.filter((r) => r === "busy").length).toBeGreaterThanOrEqual(1);
    for (let round = 0; round < 6; round++) {
      for (const device of ids) await answer(database, device);
      await Promise.all([drive(database, id), drive(database, id)]);
    }
    expect((await getRollout(database.sql, id)).status).toBe("completed");
    const perDevice = await commandsPerDevice(database);
    expect(ids.map((d) => perDevice.get(d))).toEqual(ids.map(() => 1));
  });
});

describe("rollout driver edges", () => {
  const errorsOf = async (id: string) =>
    (
      await database.sql<{ state: string; error: string | null }[]>`
        select state, error from rollout_targets where rollout_id = ${id}::uuid order by position`
    ).map((r) => `${r.state}: ${r.error}`);

  test("drivers of two rollouts do not wait for each other, and leave no lock behind", async () => {
    const [a, b] = await Promise.all(
      ["lock-a", "lock-b"].map(async (name) =>
        createRollout(
          database,
          { action: install(name), target: { ids: await insertDevices(database, 1) } },
          context(),
        ),
      ),
    );
    expect(await Promise.all([drive(database, a!), drive(database, b!)])).toEqual(["again", "again"]);
    const [locks] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from pg_locks where locktype = 'advisory'
        and database = (select oid from pg_database where datname = current_database())`;
    expect(locks!.n).toBe(0);
  });

  test("a finished or unknown rollout is done at once", async () => {
    const ids = await insertDevices(database, 1, "pending");
    const id = await createRollout(database, { action: { type: "approve" }, target: { ids } }, context());
    expect(await drive(database, id)).toBe("done");
    expect(await drive(database, id)).toBe("done");
    expect(await drive(database, crypto.randomUUID())).toBe("done");
  });

  test("failures exactly at the threshold do not pause; one more does", async () => {
    const ids = await insertDevices(database, 5);
    const id = await createRollout(
      database,
      { action: install("at-threshold"), target: { ids }, canary_count: 5, failure_threshold: 20 },
      context(),
    );
    await drive(database, id);
    await answer(database, ids[0]!, true);
    await drive(database, id);
    expect((await rolloutRow(database, id)).status).toBe("running"); // 1 of 5: 20 %, not over
    await answer(database, ids[1]!, true);
    expect(await drive(database, id)).toBe("again");
    expect(await rolloutRow(database, id)).toMatchObject({ status: "paused", pause_reason: "threshold" });
  });

  test("a driver with every slot in flight, or every device of the wave started, runs again later", async () => {
    const ids = await insertDevices(database, 3);
    const id = await createRollout(
      database,
      { action: install("slots"), target: { ids }, canary_count: 2, concurrency: 1 },
      context(),
    );
    expect(await drive(database, id)).toBe("again");
    expect(await drive(database, id)).toBe("again"); // its one slot is taken
    await answer(database, ids[0]!);
    expect(await drive(database, id)).toBe("again");
    const wide = await createRollout(
      database,
      { action: install("started"), target: { ids: await insertDevices(database, 2) }, concurrency: 5 },
      context(),
    );
    expect(await drive(database, wide)).toBe("again");
    expect(await drive(database, wide)).toBe("again"); // slots free, but nothing left to start
    const [output] = await database.sql<{ output: unknown }[]>`
      select output from rollout_targets where rollout_id = ${id}::uuid and device_id = ${ids[0]!}::uuid`;
    expect(output!.output).toEqual({ installed: true });
  });

  test("an operator's pause and resume accept no failures: the wave still pauses at the threshold", async () => {
    const ids = await insertDevices(database, 2);
    const id = await createRollout(
      database,
      { action: install("operator-resume"), target: { ids }, canary_count: 2, failure_threshold: 10 },
      context(),
    );
    await drive(database, id);
    await controlRollout(database, id, "pause", new Date());
    expect(await rolloutRow(database, id)).toMatchObject({ status: "paused", pause_reason: "operator" });
    await controlRollout(database, id, "resume", new Date());
    expect(await rolloutRow(database, id)).toMatchObject({ status: "running", pause_reason: null });
    await answer(database, ids[0]!, true);
    await drive(database, id);
    expect(await rolloutRow(database, id)).toMatchObject({ status: "paused", pause_reason: "threshold" });
  });

  test("a device deleted before its turn is skipped; one deleted with its command queued too", async () => {
    const ids = await insertDevices(database, 3);
    const id = await createRollout(
      database,
      { action: install("deleted"), target: { ids }, concurrency: 1 },
      context(),
    );
    await drive(database, id);
    await database.sql`delete from devices where id = any(${ids.slice(0, 2)}::uuid[])`;
    await drive(database, id); // the first's command went with its device; the second cannot be queued
    await drive(database, id);
    expect(await answer(database, ids[2]!)).toBe(1);
    await drive(database, id);
    expect(await errorsOf(id)).toEqual([
      "skipped: Its command was withdrawn",
      "skipped: The device no longer exists",
      "succeeded: null",
    ]);
    expect((await rolloutRow(database, id)).status).toBe("completed");
  });

  test("at the deadline itself: a delivered device has no result, a queued one was offline, the rest not started", async () => {
    const ids = await insertDevices(database, 3);
    const now = new Date();
    const deadline = new Date(now.getTime() + 60_000);
    const id = await createRollout(
      database,
      { action: install("deadline"), target: { ids }, concurrency: 2, deadline: deadline.toISOString() },
      context(now),
    );
    await drive(database, id, now);
    await claimCommands(database.sql, ids[0]!);
    await drive(database, id, now);
    expect(await drive(database, id, deadline)).toBe("done");
    expect(await errorsOf(id)).toEqual([
      "skipped: No result by the deadline",
      "skipped: Offline until the deadline",
      "skipped: Not started before the deadline",
    ]);
    expect((await rolloutRow(database, id)).status).toBe("completed");
  });

  test("a cancelled rollout waiting for a result stays cancelled at the deadline", async () => {
    const ids = await insertDevices(database, 1);
    const now = new Date();
    const deadline = new Date(now.getTime() + 60_000);
    const id = await createRollout(
      database,
      { action: install("cancel-deadline"), target: { ids }, deadline: deadline.toISOString() },
      context(now),
    );
    await drive(database, id, now);
    await claimCommands(database.sql, ids[0]!);
    await controlRollout(database, id, "cancel", now);
    expect(await drive(database, id, now)).toBe("again");
    expect(await drive(database, id, deadline)).toBe("done");
    expect(await rolloutRow(database, id)).toMatchObject({ status: "cancelled" });
    expect(await errorsOf(id)).toEqual(["skipped: No result by the deadline"]);
  });
});
