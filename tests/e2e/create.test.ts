import { describe, expect, test } from "bun:test";
import {
  GATED_CREATE as gated,
  openSeedGate,
  PLAIN_CREATE as plain,
  runnerHeaders,
  startCreateTests,
  startE2EApp,
} from "./fixtures";

// Run creation: the environment lock and the seed (idempotency keys: idempotency.test.ts; the API's
// other routes: api.test.ts).
const GRACE_S = 2; // seed_pickup_grace_s (default 30), so the no-worker case ends quickly
const { fixture, shortGraceFixture, api, sql, lockOf, inFlightLock } = await startCreateTests(GRACE_S);

/** Ends a gated create: opens the gate, waits for its answer, cancels its run; closes the gate again. */
async function settle(create: ReturnType<typeof api.create>) {
  openSeedGate(fixture);
  const { response, json } = await create;
  if (response.status === 201) await api.request("POST", `/e2e/runs/${json.data.id}/cancel`);
  openSeedGate(fixture, false);
}

describe("create, lock and seed", () => {
  // The journeys' registry check is the last of the body's checks (the others: api.test.ts).
  test("unregistered action, wrong expect or missing journey file → 400 invalid_action_expectation", async () => {
    for (const suite of ["broken_action", "broken_expect", "missing_file"]) {
      const { response, json } = await api.create({ ...plain, suite_id: suite });
      expect(response.status).toBe(400);
      expect(json.error.code).toBe("invalid_action_expectation");
      expect(typeof json.error.details.journey_id).toBe("string");
    }
    const bad = await api.create({ ...plain, suite_id: "broken_expect" });
    expect(bad.json.error.message).toBe(
      "Journey 'bad_expect' action 'fetch_dashboard' does not allow expect 'something_else'.",
    );
    // Selecting only the good journey of that suite is fine.
    const ok = await api.create({ ...plain, suite_id: "broken_expect", journey_ids: ["dashboard"] });
    expect(ok.response.status).toBe(201);
    await api.request("POST", `/e2e/runs/${ok.json.data.id}/cancel`);
  });

  test("201 with a queued run, started_at set, finished_at null, one queued result per journey", async () => {
    const { response, json } = await api.create({
      suite_id: "three",
      environment_label: "local",
      trigger_source: "ci",
      journey_ids: ["auth", "dashboard"],
      metadata: { commit: "abc123" },
    });
    expect(response.status).toBe(201);
    const run = json.data;
    expect(Object.keys(run).sort()).toEqual(
      [
        "environment_label",
        "finished_at",
        "id",
        "journey_ids",
        "protocol_version",
        "started_at",
        "status",
        "suite_id",
        "trigger_source",
      ].sort(),
    );
    expect(run).toMatchObject({
      suite_id: "three",
      environment_label: "local",
      trigger_source: "ci",
      protocol_version: "1",
      status: "queued",
      finished_at: null,
    });
    expect(run.journey_ids).toEqual(["auth", "dashboard"]);
    expect(run.started_at).toMatch(/Z$/);
    const results = await api.get(`/e2e/runs/${run.id}/results`);
    expect(results.json.data.map((r: any) => [r.journey_id, r.status])).toEqual([
      ["auth", "queued"],
      ["dashboard", "queued"],
    ]);
    expect((await lockOf("local"))!.run_id).toBe(run.id);
    // The seed ran as a job and left its trace.
    const [seed] =
      await sql`select status, exit_code from e2e_seed_runs where environment_label = 'local' order by created_at desc limit 1`;
    expect(seed).toMatchObject({ status: "succeeded", exit_code: 0 });
    const [jobRun] =
      await sql`select status from job_runs where task_identifier = 'e2e_seed' order by started_at desc limit 1`;
    expect(jobRun!.status).toBe("succeeded");
    // GET /e2e/runs/:id and the list show it.
    expect((await api.get(`/e2e/runs/${run.id}`)).json.data).toEqual(run);
    const list = await api.get("/e2e/runs?environment_label=local");
    expect(list.json.data[0].id).toBe(run.id);
    await api.request("POST", `/e2e/runs/${run.id}/cancel`);
    expect(await lockOf("local")).toBeUndefined();
  });

  test("a second create on a locked environment → 409 environment_locked; other environments are free", async () => {
    const first = await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" });
    expect(first.response.status).toBe(201);
    const second = await api.create({
      suite_id: "smoke",
      environment_label: "plain",
      trigger_source: "manual",
    });
    expect(second.response.status).toBe(409);
    expect(second.json.error.code).toBe("environment_locked");
    expect(second.json.error.details.run_id).toBe(first.json.data.id);
    const other = await api.create({ suite_id: "smoke", environment_label: "staging", trigger_source: "ci" });
    expect(other.response.status).toBe(201);
    for (const run of [first, other]) await api.request("POST", `/e2e/runs/${run.json.data.id}/cancel`);
  });

  test("a running run's lock is never stale, however old: the next create is 409", async () => {
    const first = await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" });
    expect(first.response.status).toBe(201);
    await sql`update e2e_runs set status = 'running', started_at = now() - interval '1 day'
      where id = ${first.json.data.id}::uuid`;
    await sql`update e2e_environment_locks set acquired_at = now() - interval '1 day'
      where environment_label = 'plain'`;
    const second = await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" });
    expect(second.response.status).toBe(409);
    expect(second.json.error.code).toBe("environment_locked");
    expect(second.json.error.details.run_id).toBe(first.json.data.id);
    await api.request("POST", `/e2e/runs/${first.json.data.id}/cancel`);
  });

  test("20 concurrent creates on one environment → exactly one 201, the rest 409", async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.create({ suite_id: "smoke", environment_label: "local", trigger_source: "ci" }),
      ),
    );
    const statuses = responses.map((r) => r.response.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    const [count] =
      await sql`select count(*)::int as n from e2e_runs where environment_label = 'local' and status in ('queued','running')`;
    expect(count!.n).toBe(1);
    const created = responses.find((r) => r.response.status === 201)!;
    await api.request("POST", `/e2e/runs/${created.json.data.id}/cancel`);
  });

  test("a lock lost while seeding (cleared meanwhile) → 422 database_error and no run, not a run without a lock", async () => {
    const first = api.create(gated);
    try {
      expect(await inFlightLock("gated")).toEqual({ idempotency_key: null, run_id: null });
      await sql`delete from e2e_environment_locks where environment_label = 'gated'`;
      openSeedGate(fixture);
      const { response, json } = await first;
      expect(response.status).toBe(422);
      expect(json.error.code).toBe("database_error");
      const active =
        await sql`select count(*)::int as n from e2e_runs where environment_label = 'gated' and status = 'queued'`;
      expect(active[0]!.n).toBe(0);
      expect(await lockOf("gated")).toBeUndefined();
    } finally {
      await settle(first);
    }
  });

  test("seed failure → 422 seed_failed with exit code and stderr tail; no run; lock released", async () => {
    const started = Date.now();
    const { response, json } = await api.create({
      suite_id: "smoke",
      environment_label: "failing",
      trigger_source: "ci",
    });
    expect(response.status).toBe(422);
    expect(json.error.code).toBe("seed_failed");
    expect(json.error.details).toMatchObject({
      reason: "exit_code",
      exit_code: 3,
      signal: null,
      timed_out: false,
    });
    expect(typeof json.error.details.duration_ms).toBe("number");
    expect(json.error.details.stderr_tail).toContain("database fixture missing: widgets");
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await lockOf("failing")).toBeUndefined();
    const [runs] = await sql`select count(*)::int as n from e2e_runs where environment_label = 'failing'`;
    expect(runs!.n).toBe(0);
    // The job runner records the run's end after the task returns, which may be after the reply.
    const jobStatus = async () =>
      (
        await sql<{ status: string }[]>`
          select status from job_runs where task_identifier = 'e2e_seed' order by started_at desc limit 1`
      )[0]?.status;
    for (let i = 0; i < 50 && (await jobStatus()) === "running"; i++) await Bun.sleep(100);
    expect(await jobStatus()).toBe("failed");
  });

  test("seed timeout → 422 seed_failed timed_out, the seed process group is killed; lock released", async () => {
    const started = Date.now();
    const { response, json } = await api.create({
      suite_id: "smoke",
      environment_label: "slow",
      trigger_source: "ci",
    });
    expect(response.status).toBe(422);
    expect(json.error.code).toBe("seed_failed");
    expect(json.error.details).toMatchObject({ reason: "timed_out", timed_out: true, exit_code: null });
    expect(json.error.message).toContain("timed out after 1 s");
    expect(Date.now() - started).toBeLessThan(6000);
    expect(await lockOf("slow")).toBeUndefined();
  });

  test("no worker picks the seed up (web-only process) → 422 seed_failed not_picked_up after timeout + grace; lock released; the seed never runs later", async () => {
    const web = await startE2EApp(shortGraceFixture, { OUTPOST_ROLE: "web" });
    const started = Date.now();
    const response = await web.fetch("/e2e/runs", {
      method: "POST",
      headers: runnerHeaders(),
      body: JSON.stringify({ suite_id: "smoke", environment_label: "slow", trigger_source: "ci" }),
    });
    const waited = Date.now() - started;
    expect(response.status).toBe(422);
    const json = (await response.json()) as any;
    expect(json.error.code).toBe("seed_failed");
    expect(json.error.message).toContain("no worker picked the seed job up");
    // The same details as every other seed failure, plus the reason; the seed never ran.
    expect(Object.keys(json.error.details).sort()).toEqual(
      ["duration_ms", "exit_code", "reason", "signal", "stderr_tail", "timed_out"].sort(),
    );
    expect(json.error.details).toMatchObject({
      reason: "not_picked_up",
      exit_code: null,
      signal: null,
      timed_out: false,
    });
    expect(json.error.details.duration_ms).toBeGreaterThanOrEqual(1000 + GRACE_S * 1000);
    expect(waited).toBeGreaterThanOrEqual(1000 + GRACE_S * 1000);
    const webSql = web.database.sql;
    expect(await webSql`select 1 from e2e_environment_locks where environment_label = 'slow'`).toHaveLength(
      0,
    );
    expect(await webSql`select 1 from e2e_runs`).toHaveLength(0);
    const [seed] = await webSql`select status from e2e_seed_runs where environment_label = 'slow'`;
    expect(seed!.status).toBe("failed");
  }, 60_000);

  test("persistence failure → 422 database_error without internals; lock released", async () => {
    await sql`create or replace function e2e_test_fail() returns trigger language plpgsql as $$ begin raise exception 'secret internal detail'; end $$`;
    await sql`create trigger e2e_test_fail before insert on e2e_run_results for each row execute function e2e_test_fail()`;
    try {
      const { response, json } = await api.create({
        suite_id: "smoke",
        environment_label: "plain",
        trigger_source: "ci",
      });
      expect(response.status).toBe(422);
      expect(json.error).toEqual({ code: "database_error", message: "Failed to create run." });
      expect(JSON.stringify(json)).not.toContain("secret");
      expect(await lockOf("plain")).toBeUndefined();
    } finally {
      await sql`drop trigger e2e_test_fail on e2e_run_results`;
    }
  });

  test("a lock left by a creator that died before persisting is taken over once stale", async () => {
    await sql`insert into e2e_environment_locks (environment_label, holder, runner_id, acquired_at) values ('plain', ${crypto.randomUUID()}, 'ghost', now() - interval '1 day')`;
    const { response, json } = await api.create({
      suite_id: "smoke",
      environment_label: "plain",
      trigger_source: "ci",
    });
    expect(response.status).toBe(201);
    expect((await lockOf("plain"))!.run_id).toBe(json.data.id);
    await api.request("POST", `/e2e/runs/${json.data.id}/cancel`);
  });
});
