// Idempotency keys on run creation: concurrent creates, a create waiting for another one with its key,
// replays (the lock and the seed: create.test.ts).
import { describe, expect, test } from "bun:test";
import {
  e2eClient,
  failNextGatedSeed,
  GATED_CREATE as gated,
  openSeedGate,
  PLAIN_CREATE as plain,
  startCreateTests,
  startE2EApp,
} from "./fixtures";

const GRACE_S = 2; // seed_pickup_grace_s (default 30), so a wait that runs out ends quickly
const { fixture, shortGraceFixture, api, sql, lockOf, inFlightLock } = await startCreateTests(GRACE_S);

async function stillPendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const answered = promise.then(
    () => false,
    () => false,
  );
  return Promise.race([answered, Bun.sleep(ms).then(() => true)]);
}

/** Ends a gated create: opens the gate, waits for its answer, cancels its run; closes the gate again. */
async function settle(create: ReturnType<typeof api.create>) {
  openSeedGate(fixture);
  const { response, json } = await create;
  if (response.status === 201) await api.request("POST", `/e2e/runs/${json.data.id}/cancel`);
  openSeedGate(fixture, false);
}

async function seedCount(environment: string): Promise<number> {
  const [row] =
    await sql`select count(*)::int as n from e2e_seed_runs where environment_label = ${environment}`;
  return row!.n;
}

describe("idempotency: one run per key, however the creates interleave", () => {
  test("20 concurrent creates with one idempotency key → one run (one 201, the rest replay it with 200)", async () => {
    const key = `ci-build-${crypto.randomUUID()}`;
    const [{ before }] =
      (await sql`select count(*)::int as before from e2e_seed_runs where environment_label = 'staging'`) as any;
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.create({
          suite_id: "smoke",
          environment_label: "staging",
          trigger_source: "ci",
          idempotency_key: key,
        }),
      ),
    );
    const ids = new Set(responses.map((r) => r.json.data?.id));
    expect(ids.size).toBe(1);
    expect(responses.filter((r) => r.response.status === 201)).toHaveLength(1);
    const replays = responses.filter((r) => r.response.status === 200);
    expect(replays).toHaveLength(19);
    for (const r of replays) expect(r.response.headers.get("idempotent-replayed")).toBe("true");
    const [count] = await sql`select count(*)::int as n from e2e_runs where idempotency_key = ${key}`;
    expect(count!.n).toBe(1);
    const [seeds] =
      await sql`select count(*)::int as n from e2e_seed_runs where environment_label = 'staging'`;
    expect(seeds!.n - before).toBe(1);
    await api.request("POST", `/e2e/runs/${[...ids][0]}/cancel`);
  });

  test("a create with a key another request is still creating (its seed is running) waits for it and replays its run", async () => {
    const body = { ...gated, idempotency_key: `gated-${crypto.randomUUID()}` };
    const seedsBefore = await seedCount("gated");
    const first = api.create(body);
    try {
      expect(await inFlightLock("gated")).toEqual({ idempotency_key: body.idempotency_key, run_id: null });
      const second = api.create(body);
      // While the first's seed waits at the gate, the second has no answer: neither a 409 nor a run
      // of its own (it had no lock, so it never seeded).
      expect(await stillPendingAfter(second, 1000)).toBe(true);
      openSeedGate(fixture);
      const created = await first;
      const replayed = await second;
      expect(created.response.status).toBe(201);
      expect(replayed.response.status).toBe(200);
      expect(replayed.response.headers.get("idempotent-replayed")).toBe("true");
      expect(replayed.json.data.id).toBe(created.json.data.id);
      expect((await seedCount("gated")) - seedsBefore).toBe(1);
      // Another key meanwhile: the environment is locked by that run.
      const other = await api.create({ ...body, idempotency_key: `other-${crypto.randomUUID()}` });
      expect(other.response.status).toBe(409);
      expect(other.json.error.details.run_id).toBe(created.json.data.id);
    } finally {
      await settle(first);
    }
  });

  test("while a run is being created (seed running), creates with another key or none → 409 at once, not after that seed", async () => {
    const first = api.create(gated);
    try {
      expect(await inFlightLock("gated")).toEqual({ idempotency_key: null, run_id: null });
      const others = Promise.all([
        api.create({ ...gated, idempotency_key: `other-${crypto.randomUUID()}` }),
        api.create({ ...gated, trigger_source: "manual" }),
      ]);
      // Answered while the first's seed still waits at the gate (generous: a 409 takes milliseconds).
      expect(await stillPendingAfter(others, 15_000)).toBe(false);
      for (const other of await others) {
        expect(other.response.status).toBe(409);
        expect(other.json.error.code).toBe("environment_locked");
        expect(other.json.error.details).toEqual({ environment_label: "gated", run_id: null });
      }
      expect(await lockOf("gated")).toEqual({ run_id: null });
    } finally {
      await settle(first);
    }
  });

  test("a create waiting for another request with its key, whose seed then fails, creates the run itself", async () => {
    const body = { ...gated, idempotency_key: `gated-${crypto.randomUUID()}` };
    failNextGatedSeed(fixture);
    const first = api.create(body);
    let second: ReturnType<typeof api.create> | undefined;
    try {
      expect(await inFlightLock("gated")).toEqual({ idempotency_key: body.idempotency_key, run_id: null });
      second = api.create(body);
      expect(await stillPendingAfter(second, 1000)).toBe(true);
      openSeedGate(fixture);
      const failed = await first;
      expect(failed.response.status).toBe(422);
      expect(failed.json.error.code).toBe("seed_failed");
      // The lock was released: the waiting request took it, seeded and created the run.
      const own = await second;
      expect(own.response.status).toBe(201);
      expect(own.response.headers.get("idempotent-replayed")).toBeNull();
      expect((await lockOf("gated"))!.run_id).toBe(own.json.data.id);
    } finally {
      await settle(first);
      if (second) await settle(second);
    }
  });

  test("a create whose key's lock stays unbound for the whole wait (its creator died) → 409 after seed timeout + grace", async () => {
    const short = await startE2EApp(shortGraceFixture);
    try {
      const key = `ghost-${crypto.randomUUID()}`;
      await short.database
        .sql`insert into e2e_environment_locks (environment_label, holder, idempotency_key, runner_id)
        values ('slow', ${crypto.randomUUID()}, ${key}, 'ghost')`;
      const started = Date.now();
      const { response, json } = await e2eClient(short).create({
        suite_id: "smoke",
        environment_label: "slow",
        trigger_source: "ci",
        idempotency_key: key,
      });
      expect(response.status).toBe(409);
      expect(json.error.details).toEqual({ environment_label: "slow", run_id: null });
      // It waited for the run the whole budget: slow's seed_timeout_s (1) + seed_pickup_grace_s.
      expect(Date.now() - started).toBeGreaterThanOrEqual((1 + GRACE_S) * 1000);
    } finally {
      await short.stop();
    }
  });

  test("a run with the key persisted between the first check and taking the lock is replayed; the lock is let go", async () => {
    const key = `late-${crypto.randomUUID()}`;
    // Another request's run with the key, committed just as this one takes the lock: a trigger on
    // the lock's insert stands in for it.
    await sql`create or replace function e2e_test_late_run() returns trigger language plpgsql as $$ begin
      insert into e2e_runs (suite_id, journey_ids, environment_label, trigger_source, protocol_version, runner_id,
        idempotency_key, idempotency_expires_at, status, finished_at)
      values ('smoke', array['dashboard', 'dashboard_again'], new.environment_label, 'ci', '1', 'ci-runner',
        new.idempotency_key, now() + interval '1 hour', 'passed', now());
      return new; end $$`;
    await sql`create trigger e2e_test_late_run after insert on e2e_environment_locks
      for each row when (new.idempotency_key like 'late-%') execute function e2e_test_late_run()`;
    try {
      const { response, json } = await api.create({
        ...gated,
        environment_label: "plain",
        idempotency_key: key,
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("idempotent-replayed")).toBe("true");
      const runs = await sql`select id::text as id from e2e_runs where idempotency_key = ${key}`;
      expect(runs.map((r) => r.id)).toEqual([json.data.id]);
      expect(json.data.status).toBe("passed");
      expect(await lockOf("plain")).toBeUndefined();
    } finally {
      await sql`drop trigger e2e_test_late_run on e2e_environment_locks`;
      await sql`delete from e2e_environment_locks where environment_label = 'plain' and run_id is null`;
    }
  });

  test("idempotency: a replay returns the run (also after it finished); different suite or journeys → 400; other environment is a new run", async () => {
    const key = "release-42";
    const body = {
      suite_id: "smoke",
      environment_label: "plain",
      trigger_source: "ci",
      idempotency_key: key,
    };
    const first = await api.create(body);
    expect(first.response.status).toBe(201);
    expect(first.response.headers.get("idempotent-replayed")).toBeNull();
    const again = await api.create({ ...body, metadata: { ignored: true } });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    expect(again.json.data).toEqual(first.json.data);
    const differentJourneys = await api.create({ ...body, journey_ids: ["dashboard"] });
    expect(differentJourneys.response.status).toBe(400);
    expect(differentJourneys.json.error.details.field).toBe("idempotency_key");
    const differentSuite = await api.create({ ...body, suite_id: "three" });
    expect(differentSuite.response.status).toBe(400);
    await api.request("POST", `/e2e/runs/${first.json.data.id}/cancel`);
    // Same suite, as many journeys, one of them the same: a different selection all the same.
    const picked = {
      ...body,
      suite_id: "three",
      idempotency_key: `${key}-picked`,
      journey_ids: ["dashboard", "dashboard_again"],
    };
    const pickedRun = await api.create(picked);
    expect(pickedRun.response.status).toBe(201);
    const onePlaceDifferent = await api.create({ ...picked, journey_ids: ["dashboard", "auth"] });
    expect(onePlaceDifferent.response.status).toBe(400);
    expect(onePlaceDifferent.json.error.details).toEqual({
      field: "idempotency_key",
      run_id: pickedRun.json.data.id,
    });
    // The same journeys and one more: a different selection too.
    const oneMore = await api.create({ ...picked, journey_ids: ["dashboard", "dashboard_again", "auth"] });
    expect(oneMore.response.status).toBe(400);
    await api.request("POST", `/e2e/runs/${pickedRun.json.data.id}/cancel`);
    const afterFinish = await api.create(body);
    expect(afterFinish.response.status).toBe(200);
    expect(afterFinish.json.data.status).toBe("cancelled");
    const elsewhere = await api.create({ ...body, environment_label: "staging" });
    expect(elsewhere.response.status).toBe(201);
    expect(elsewhere.json.data.id).not.toBe(first.json.data.id);
    await api.request("POST", `/e2e/runs/${elsewhere.json.data.id}/cancel`);
    // After 24 h the key is free again.
    await sql`update e2e_runs set idempotency_expires_at = now() - interval '1 second' where idempotency_key = ${key}`;
    const expired = await api.create(body);
    expect(expired.response.status).toBe(201);
    await api.request("POST", `/e2e/runs/${expired.json.data.id}/cancel`);
  });

  test("a replay only reads: it neither clears a stale lock nor takes the environment's lock", async () => {
    const body = { ...plain, idempotency_key: `read-only-${crypto.randomUUID()}` };
    const created = await api.create(body);
    await api.request("POST", `/e2e/runs/${created.json.data.id}/cancel`);
    const holder = crypto.randomUUID();
    await sql`insert into e2e_environment_locks (environment_label, holder, runner_id, acquired_at)
      values ('plain', ${holder}, 'ghost', now() - interval '1 day')`;
    try {
      const replayed = await api.create(body);
      expect(replayed.response.status).toBe(200);
      expect(replayed.json.data.id).toBe(created.json.data.id);
      const locks =
        await sql`select holder::text as holder from e2e_environment_locks where environment_label = 'plain'`;
      expect(locks.map((l) => l.holder)).toEqual([holder]);
    } finally {
      await sql`delete from e2e_environment_locks where environment_label = 'plain' and holder = ${holder}`;
    }
  });
});
