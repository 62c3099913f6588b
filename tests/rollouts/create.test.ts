// Creating a rollout at the service (modules/rollouts/create.ts), against a real database: the canary's
// size, the deadline's bounds, which devices a target names and in what order, the name and defaults,
// and the overlap a 409 reports; the command's expiry at the deadline; a state action's batches per run;
// the controls' refusals.
import { describe, expect, test } from "bun:test";
import { claimCommands } from "../../modules/commands/service";
import { createView } from "../../modules/fleet/service";
import { AppError } from "../../modules/platform/errors";
import { controlRollout, createRollout, getRollout } from "../../modules/rollouts/service";
import { createTestDatabase } from "../helpers/database";
import { drive, insertDevices, OPTIONS, script } from "./helpers";

const database = await createTestDatabase();
const context = (now = new Date()) => ({ createdBy: "ops@example.test", now, ...OPTIONS });
const approve = { type: "approve" as const };
type Body = Parameters<typeof createRollout>[1];

/** The AppError `run` throws (fails the test when it resolves). */
async function refusal(run: Promise<unknown>): Promise<AppError> {
  const error = await run.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

const create = (body: Partial<Body>, now = new Date()) =>
  createRollout(database, { action: approve, ...body } as Body, context(now));

async function waves(id: string): Promise<number[]> {
  const rows = await database.sql<{ wave: number }[]>`
    select wave from rollout_targets where rollout_id = ${id}::uuid order by position`;
  return rows.map((r) => r.wave);
}

describe("the canary", () => {
  test("a count (at most every device), a percentage rounded up to at least one, none by default", async () => {
    const ids = await insertDevices(database, 5);
    const cases: [Partial<Body>, number][] = [
      [{ canary_count: 2 }, 2],
      [{ canary_count: 9 }, 5],
      [{ canary_count: 0 }, 0],
      [{ canary_percent: 10 }, 1],
      [{ canary_percent: 50 }, 3],
      [{ canary_percent: 100 }, 5],
      [{ canary_percent: 0 }, 0],
      [{}, 0],
    ];
    for (const [canary, size] of cases) {
      const id = await create({ target: { ids }, ...canary, confirm_overlap: true });
      expect({ canary, size: (await getRollout(database.sql, id)).canary_size }).toEqual({ canary, size });
      expect(await waves(id)).toEqual(ids.map((_, i) => (i < size ? 1 : 2)));
    }
  });

  test("a count and a percentage together are refused", async () => {
    const ids = await insertDevices(database, 2);
    const error = await refusal(create({ target: { ids }, canary_count: 1, canary_percent: 50 }));
    expect(error).toMatchObject({ status: 400, details: { field: "canary_count" } });
  });
});

describe("the deadline", () => {
  test("24 hours by default; up to 30 days away, in the future", async () => {
    const ids = await insertDevices(database, 1);
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    const byDefault = await create({ target: { ids } }, now);
    expect((await getRollout(database.sql, byDefault)).deadline).toBe(
      new Date(now.getTime() + 24 * 3_600_000).toISOString(),
    );
    const latest = new Date(now.getTime() + 30 * 24 * 3_600_000);
    const far = await create({ target: { ids }, deadline: latest.toISOString(), confirm_overlap: true }, now);
    expect((await getRollout(database.sql, far)).deadline).toBe(latest.toISOString());
    for (const deadline of [
      new Date(latest.getTime() + 1000).toISOString(),
      now.toISOString(),
      new Date(now.getTime() - 1000).toISOString(),
      "tomorrow",
    ]) {
      const error = await refusal(create({ target: { ids }, deadline, confirm_overlap: true }, now));
      expect({ deadline, status: error.status, details: error.details }).toEqual({
        deadline,
        status: 400,
        details: { field: "deadline" },
      });
    }
  });

  test("a command expires at the deadline", async () => {
    const ids = await insertDevices(database, 1);
    const now = new Date();
    const deadline = new Date(now.getTime() + 3_600_000);
    const id = await createRollout(
      database,
      {
        action: { type: "install_script", script: script("ttl") },
        target: { ids },
        deadline: deadline.toISOString(),
      },
      context(now),
    );
    await drive(database, id, now);
    const [command] = await database.sql<{ expires_at: Date }[]>`
      select expires_at from pending_commands where queued_by = ${`rollout ${id}`}`;
    expect(Math.abs(command!.expires_at.getTime() - deadline.getTime())).toBeLessThan(3000);
  });
});

describe("the target", () => {
  test("ids: the existing ones, each once, in the order given", async () => {
    const ids = await insertDevices(database, 3);
    const missing = crypto.randomUUID();
    const id = await create({
      target: { ids: [ids[2]!, "not-a-uuid", ids[0]!.toUpperCase(), missing, ids[2]!, ids[1]!] },
    });
    const rows = await database.sql<{ device_id: string }[]>`
      select device_id::text as device_id from rollout_targets where rollout_id = ${id}::uuid order by position`;
    expect(rows.map((r) => r.device_id)).toEqual([ids[2], ids[0], ids[1]]);
    expect((await getRollout(database.sql, id)).target).toEqual({ kind: "ids", query: null, view: null });
  });

  test("a query (trimmed), resolved once", async () => {
    const ids = await insertDevices(database, 2);
    for (const device of ids)
      await database.sql`insert into device_tags (device_id, key, value) values (${device}::uuid, 'ring', 'create')`;
    const id = await create({ target: { q: "  tag:ring=create " } });
    expect(await getRollout(database.sql, id)).toMatchObject({
      total: 2,
      target: { kind: "query", query: "tag:ring=create", view: null },
    });
  });

  test("a view (trimmed), with a query narrowing it", async () => {
    const ids = await insertDevices(database, 2);
    for (const device of ids)
      await database.sql`insert into device_tags (device_id, key, value) values (${device}::uuid, 'ring', 'view')`;
    await database.sql`insert into device_tags (device_id, key, value) values (${ids[0]!}::uuid, 'site', 'a')`;
    await createView(database, { name: "ring view", query: "tag:ring=view" }, "ops@example.test");
    const id = await create({ target: { view: " ring view " } });
    expect(await getRollout(database.sql, id)).toMatchObject({
      total: 2,
      target: { kind: "view", query: null, view: "ring view" },
    });
    const blankView = await create({ target: { view: "  ", q: "tag:ring=view" }, confirm_overlap: true });
    expect((await getRollout(database.sql, blankView)).target).toEqual({
      kind: "query",
      query: "tag:ring=view",
      view: null,
    });
    const narrowed = await create({ target: { view: "ring view", q: "tag:site=a" }, confirm_overlap: true });
    expect(await getRollout(database.sql, narrowed)).toMatchObject({
      total: 1,
      target: { kind: "view", query: "tag:site=a", view: "ring view" },
    });
  });

  test("refused: ids and a query, neither (blank counts as none), too many ids, no device", async () => {
    const ids = await insertDevices(database, 1);
    const cases: [Body["target"], string][] = [
      [{ ids, q: "tag:x" }, "target"],
      [{ ids, view: "all" }, "target"],
      [{}, "target"],
      [{ q: "   " }, "target"],
      [{ ids: [] }, "target"],
      [{ ids: Array.from({ length: 1001 }, () => crypto.randomUUID()) }, "target.ids"],
      [{ ids: [crypto.randomUUID()] }, "target"],
      [{ q: "tag:nobody-has-this" }, "target"],
    ];
    for (const [target, field] of cases) {
      const error = await refusal(create({ target }));
      expect({ target: Object.keys(target), status: error.status, details: error.details }).toEqual({
        target: Object.keys(target),
        status: 400,
        details: { field },
      });
    }
  });

  test("1000 ids are taken", async () => {
    const ids = await insertDevices(database, 1);
    const padded = [...ids, ...Array.from({ length: 999 }, () => crypto.randomUUID())];
    const id = await create({ target: { ids: padded }, confirm_overlap: true });
    expect((await getRollout(database.sql, id)).total).toBe(1);
  });
});

test("the name (trimmed, or the action's) and the defaults", async () => {
  const ids = await insertDevices(database, 1);
  const named = await getRollout(database.sql, await create({ target: { ids }, name: "  ring 1  " }));
  expect(named).toMatchObject({ name: "ring 1", concurrency: 50, failure_threshold: 10, status: "running" });
  const unnamed = await create({ target: { ids }, name: "   ", confirm_overlap: true });
  expect((await getRollout(database.sql, unnamed)).name).toBe("Approve");
  const long = await create({ target: { ids }, name: "n".repeat(150), confirm_overlap: true });
  expect((await getRollout(database.sql, long)).name).toBe("n".repeat(100));
});

test("an overlap names the other rollouts and at most 20 of the devices", async () => {
  const ids = await insertDevices(database, 25);
  const first = await create({ target: { ids: ids.slice(0, 22) }, name: "first" });
  const second = await create({ target: { ids: ids.slice(20) }, name: "second", confirm_overlap: true });
  const error = await refusal(create({ target: { ids } }));
  expect(error).toMatchObject({ status: 409, code: "rollout_overlap" });
  const details = error.details as { count: number; device_ids: string[]; rollouts: unknown[] };
  expect(details.count).toBe(25);
  expect(details.device_ids.length).toBe(20);
  expect(new Set(details.device_ids).size).toBe(20);
  expect(details.device_ids.every((d) => ids.includes(d))).toBe(true);
  expect(details.rollouts).toEqual(
    expect.arrayContaining([
      { id: first, name: "first" },
      { id: second, name: "second" },
    ]),
  );
  expect(details.rollouts.length).toBe(2);
  // Finished rollouts do not overlap: the first completes, the second is cancelled.
  await drive(database, first);
  await controlRollout(database, second, "cancel", new Date());
  const third = await create({ target: { ids } });
  expect((await getRollout(database.sql, third)).total).toBe(25);
});

test("a cancelled rollout still waiting for a device's result does not hold that device", async () => {
  const ids = await insertDevices(database, 1);
  const id = await createRollout(
    database,
    { action: { type: "install_script", script: script("held") }, target: { ids } },
    context(),
  );
  await drive(database, id);
  expect(await claimCommands(database.sql, ids[0]!)).toHaveLength(1); // the agent took it
  await controlRollout(database, id, "cancel", new Date());
  expect((await getRollout(database.sql, id)).counts).toMatchObject({ queued: 1 });
  expect((await getRollout(database.sql, await create({ target: { ids } }))).total).toBe(1);
});

test("a state action on many devices: 20 steps per driver run, then the next run", async () => {
  const ids = await insertDevices(database, 25, "pending");
  const id = await create({ target: { ids }, concurrency: 1 });
  expect(await drive(database, id)).toBe("again");
  // The first of the run's 20 steps moves past the empty canary wave; each other one acts on a device.
  expect((await getRollout(database.sql, id)).counts).toMatchObject({ succeeded: 19, queued: 6 });
  expect(await drive(database, id)).toBe("done");
  expect((await getRollout(database.sql, id)).counts).toMatchObject({ succeeded: 25, queued: 0 });
  const [unstarted] = await database.sql<{ n: number }[]>`
    select count(*)::int as n from rollout_targets where rollout_id = ${id}::uuid and started_at is null`;
  expect(unstarted!.n).toBe(0);
});

test("controls: 404 for an unknown or malformed id, 409 with the status for a transition not allowed", async () => {
  for (const id of ["nope", crypto.randomUUID()]) {
    const error = await refusal(controlRollout(database, id, "pause", new Date()));
    expect(error).toMatchObject({ status: 404, code: "rollout_not_found" });
  }
  const ids = await insertDevices(database, 1, "pending");
  const id = await create({ target: { ids } });
  expect(await drive(database, id)).toBe("done");
  for (const control of ["pause", "resume", "cancel"] as const) {
    const error = await refusal(controlRollout(database, id, control, new Date()));
    expect(error).toMatchObject({
      status: 409,
      code: "invalid_transition",
      details: { status: "completed" },
    });
  }
});
