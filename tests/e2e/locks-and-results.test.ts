// The environment lock and result submission at their edges: which unbound locks count as stale,
// who hears that a lock went, what a replay must match, and how results are stored and aggregated.
import { describe, expect, test } from "bun:test";
import { loadE2EConfig } from "../../modules/e2e/config";
import { clearStaleLocks, releaseLockHeldBy } from "../../modules/e2e/locks";
import { LOCK_CHANNEL } from "../../modules/e2e/notify";
import { aggregateRunStatus } from "../../modules/e2e/statuses";
import { e2eClient, startE2EApp, writeE2EFixture } from "./fixtures";

const fixture = writeE2EFixture();
const app = await startE2EApp(fixture);
const api = e2eClient(app);
const { sql } = app.database;
const config = loadE2EConfig(fixture.configFile);
const smoke = { suite_id: "smoke", trigger_source: "ci" };

/** Lock-channel notifications heard while `action` runs. */
async function heard(action: () => Promise<unknown>, label: string) {
  const labels: string[] = [];
  const listener = await sql.listen(LOCK_CHANNEL, (payload) => labels.push(payload));
  await action();
  for (let i = 0; i < 100 && !labels.includes(label); i++) await Bun.sleep(50);
  await listener.unlisten();
  return labels.includes(label);
}

describe("environment locks", () => {
  // An unbound lock (creator died before persisting) is stale after the longest seed timeout + the
  // pickup grace + 60 s.
  const staleAfterS =
    Math.max(...[...config.environments.values()].map((e) => e.seedTimeoutS)) + config.seedPickupGraceS + 60;

  async function unboundLock(environment: string, ageS: number) {
    await sql`insert into e2e_environment_locks (environment_label, holder, runner_id, acquired_at)
      values (${environment}, ${crypto.randomUUID()}, 'r', now() - make_interval(secs => ${ageS}))`;
  }
  const locked = async (environment: string) =>
    (await sql`select 1 from e2e_environment_locks where environment_label = ${environment}`).length === 1;

  test("an unbound lock is kept until it is older than the seed timeout + grace + 60 s", async () => {
    expect(staleAfterS).toBeGreaterThan(60);
    await unboundLock("bench", staleAfterS - 5);
    expect(await clearStaleLocks(sql, config, "bench")).toBe(0);
    expect(await locked("bench")).toBe(true);
    await sql`update e2e_environment_locks set acquired_at = now() - make_interval(secs => ${staleAfterS + 5})
      where environment_label = 'bench'`;
    expect(
      await heard(async () => expect(await clearStaleLocks(sql, config, "bench")).toBe(1), "bench"),
    ).toBe(true);
    expect(await locked("bench")).toBe(false);
  });

  test("clearing one environment's stale locks leaves the others'; without one, all go", async () => {
    await unboundLock("bench", staleAfterS + 5);
    await unboundLock("local", staleAfterS + 5);
    expect(await clearStaleLocks(sql, config, "bench")).toBe(1);
    expect(await locked("local")).toBe(true);
    expect(await clearStaleLocks(sql, config)).toBe(1);
    expect(await locked("local")).toBe(false);
  });

  test("releasing a lock tells waiting creators", async () => {
    const holder = crypto.randomUUID();
    await sql`insert into e2e_environment_locks (environment_label, holder, runner_id) values ('bench', ${holder}, 'r')`;
    expect(await heard(() => releaseLockHeldBy(sql, "bench", holder), "bench")).toBe(true);
    expect(await locked("bench")).toBe(false);
  });

  test("cancelling a run tells waiting creators", async () => {
    const { json } = await api.create({ ...smoke, environment_label: "plain" });
    expect(await heard(() => api.request("POST", `/e2e/runs/${json.data.id}/cancel`), "plain")).toBe(true);
  });
});

describe("idempotent replays", () => {
  test("a replay must name the same suite and the same journeys in the same order", async () => {
    const body = { ...smoke, environment_label: "plain", idempotency_key: "order-1" };
    const first = await api.create({ ...body, journey_ids: ["dashboard", "dashboard_again"] });
    expect(first.response.status).toBe(201);
    const reordered = await api.create({ ...body, journey_ids: ["dashboard_again", "dashboard"] });
    expect(reordered.response.status).toBe(400);
    const otherSuite = await api.create({
      ...body,
      suite_id: "three",
      journey_ids: ["dashboard", "dashboard_again"],
    });
    expect(otherSuite.response.status).toBe(400);
    expect(otherSuite.json.error.details).toEqual({ field: "idempotency_key", run_id: first.json.data.id });
    await api.request("POST", `/e2e/runs/${first.json.data.id}/cancel`);
  });
});

describe("results", () => {
  test("refusals name the field and the journeys concerned", async () => {
    const { json } = await api.create({ ...smoke, environment_label: "plain" });
    const id = json.data.id as string;
    const unknown = await api.submit(id, [
      { journey_id: "nope", status: "passed" },
      { journey_id: "dashboard", status: "passed" },
    ]);
    expect(unknown.response.status).toBe(400);
    expect(unknown.json.error.details).toEqual({ field: "results", journey_ids: ["nope"] });
    await api.submit(id, [{ journey_id: "dashboard", status: "failed" }]);
    const reopened = await api.submit(id, [{ journey_id: "dashboard", status: "running" }]);
    expect(reopened.response.status).toBe(400);
    expect(reopened.json.error.details).toEqual({ field: "results", journey_id: "dashboard" });
    const cancelled = (await api.create({ ...smoke, environment_label: "local" })).json.data.id as string;
    await api.request("POST", `/e2e/runs/${cancelled}/cancel`);
    const late = await api.submit(cancelled, [{ journey_id: "dashboard", status: "passed" }]);
    expect(late.response.status).toBe(400);
    expect(late.json.error.details).toEqual({ field: "results" });
  });

  test("texts are cut to 2000 characters; results come back in journey order", async () => {
    const { json } = await api.create({ ...smoke, environment_label: "plain" });
    const id = json.data.id as string;
    const submitted = await api.submit(id, [
      {
        journey_id: "dashboard_again",
        status: "failed",
        failure_reason: "r".repeat(2500),
        failure_step: "s",
      },
      { journey_id: "dashboard", status: "passed" },
    ]);
    expect(submitted.response.status).toBe(202);
    const results = submitted.json.data as { journey_id: string; failure_reason: string | null }[];
    expect(results.map((r) => r.journey_id)).toEqual(["dashboard", "dashboard_again"]);
    expect(results[1]!.failure_reason).toBe("r".repeat(2000));
  });

  test("a submission that changes neither the run's status nor its end leaves the run's row alone", async () => {
    const { json } = await api.create({ ...smoke, environment_label: "plain" });
    const id = json.data.id as string;
    const row = async () =>
      (await sql`select status, finished_at, updated_at from e2e_runs where id = ${id}::uuid`)[0]!;
    await api.submit(id, [{ journey_id: "dashboard", status: "running" }]);
    const running = await row();
    expect(running.status).toBe("running");
    await api.submit(id, [{ journey_id: "dashboard_again", status: "running" }]);
    expect(await row()).toEqual(running);
    await api.submit(id, [
      { journey_id: "dashboard", status: "failed" },
      { journey_id: "dashboard_again", status: "passed" },
    ]);
    const failed = await row();
    expect(failed.status).toBe("failed");
    expect(failed.finished_at).not.toBeNull();
    expect(failed.updated_at).not.toEqual(running.updated_at);
    await api.submit(id, [{ journey_id: "dashboard_again", status: "skipped" }]);
    expect(await row()).toEqual(failed);
  });

  test("a run's status from its journeys", () => {
    expect(aggregateRunStatus([])).toBe("passed");
    expect(aggregateRunStatus(["passed", "passed"])).toBe("passed");
    expect(aggregateRunStatus(["passed", "failed", "running"])).toBe("failed");
    expect(aggregateRunStatus(["passed", "queued"])).toBe("running");
    expect(aggregateRunStatus(["passed", "running"])).toBe("running");
    expect(aggregateRunStatus(["passed", "blocked"])).toBe("blocked");
    expect(aggregateRunStatus(["cancelled", "skipped"])).toBe("blocked");
    expect(aggregateRunStatus(["cancelled", "cancelled"])).toBe("cancelled");
    expect(aggregateRunStatus(["cancelled", "passed"])).toBe("passed");
  });
});
