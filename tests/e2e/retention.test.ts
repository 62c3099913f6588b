import { describe, expect, test } from "bun:test";
import retentionJob from "../../jobs/e2e-retention";
import staleJob from "../../jobs/e2e-stale-runs";
import { e2eClient, startE2EApp, writeE2EFixture } from "./fixtures";

const fixture = writeE2EFixture({ extraConfig: "run_timeout_s: 60\n" });
const app = await startE2EApp(fixture);
const api = e2eClient(app);
const { sql } = app.database;
const context = app.services;

async function finishedRun(environment = "plain") {
  const { json } = await api.create({
    suite_id: "smoke",
    environment_label: environment,
    trigger_source: "ci",
  });
  const id = json.data.id as string;
  for (const journey of ["dashboard", "dashboard_again"]) {
    await api.request("PUT", `/e2e/runs/${id}/results/${journey}/log`, "x".repeat(1000));
  }
  await api.submit(id, [
    { journey_id: "dashboard", status: "passed" },
    { journey_id: "dashboard_again", status: "passed" },
  ]);
  return id;
}

describe("retention job", () => {
  test("prunes by age and by run count, oldest first, never an active run; logs beyond the byte cap answer 410", async () => {
    const old = await finishedRun();
    const middle = await finishedRun();
    const recent = await finishedRun();
    const active = (await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" }))
      .json.data.id;
    await sql`update e2e_runs set started_at = now() - interval '30 days' where id in (${old}, ${active})`;
    await sql`update e2e_runs set started_at = now() - interval '1 day' where id = ${middle}`;

    await retentionJob.run({}, context);
    const ids = (await sql`select id::text as id from e2e_runs`).map((r) => r.id);
    expect(ids).not.toContain(old); // older than 14 days
    expect(ids).toContain(active); // active runs are never pruned, whatever their age
    expect(ids).toContain(middle);
    expect((await api.get(`/e2e/runs/${old}/results/dashboard/log`)).response.status).toBe(404);

    // Count: with max_runs 2, the oldest finished run goes.
    const { loadE2EConfig } = await import("../../modules/e2e/config");
    const { pruneRetention } = await import("../../modules/e2e/retention");
    const config = loadE2EConfig(fixture.configFile);
    let outcome = await pruneRetention(app.database, {
      ...config,
      retention: { days: 14, maxRuns: 2, maxLogBytes: 1_000_000_000 },
    });
    expect(outcome.runsDeleted).toBe(1);
    const left = (await sql`select id::text as id from e2e_runs`).map((r) => r.id).sort();
    expect(left).toEqual([active, recent].sort());

    // Bytes: 2000 bytes of logs on `recent`, cap 1500 → its oldest log's content is dropped (410), the run stays.
    outcome = await pruneRetention(app.database, {
      ...config,
      retention: { days: 14, maxRuns: 2000, maxLogBytes: 1500 },
    });
    expect(outcome.logsPruned).toBe(1);
    expect(outcome.bytesPruned).toBe(1000);
    const statuses = await Promise.all(
      ["dashboard", "dashboard_again"].map(
        async (j) => (await api.get(`/e2e/runs/${recent}/results/${j}/log`)).response.status,
      ),
    );
    expect(statuses.sort()).toEqual([200, 410]);
    await api.request("POST", `/e2e/runs/${active}/cancel`);
  });
});

describe("seed runs and configuration", () => {
  test("one pruner at a time: a second waits for the first to commit", async () => {
    const { loadE2EConfig } = await import("../../modules/e2e/config");
    const { pruneRetention } = await import("../../modules/e2e/retention");
    const keepAll = {
      ...loadE2EConfig(fixture.configFile),
      retention: { days: 3650, maxRuns: 100_000, maxLogBytes: 1e12 },
    };
    const first = await sql.reserve();
    try {
      await first`begin`;
      await first`select pg_advisory_xact_lock(7401501)`; // what a running pruner holds
      let done = false;
      const second = pruneRetention(app.database, keepAll).then(() => {
        done = true;
      });
      await Bun.sleep(300);
      expect(done).toBe(false);
      await first`commit`;
      await second;
      expect(done).toBe(true);
    } finally {
      first.release();
    }
  });

  test("seed run records older than the retention days go with the job; without E2E configured it does nothing", async () => {
    await sql`insert into e2e_seed_runs (environment_label, created_at) values
      ('old-seed', now() - interval '15 days'), ('new-seed', now() - interval '13 days')`;
    await retentionJob.run({}, context);
    const left = await sql<{ environment_label: string }[]>`
      select environment_label from e2e_seed_runs where environment_label like '%-seed'`;
    expect(left.map((r) => r.environment_label)).toEqual(["new-seed"]);
    await retentionJob.run(
      {},
      { ...context, config: { ...app.config, e2eEnabled: false, e2eConfig: undefined } },
    );
  });
});

describe("stale run job", () => {
  test("cancels a run still active after run_timeout_s and frees its environment", async () => {
    const { json } = await api.create({
      suite_id: "smoke",
      environment_label: "staging",
      trigger_source: "ci",
    });
    await sql`update e2e_runs set started_at = now() - interval '2 minutes' where id = ${json.data.id}`;
    const fresh = (await api.create({ suite_id: "smoke", environment_label: "local", trigger_source: "ci" }))
      .json.data.id;
    await staleJob.run({}, context);
    expect((await api.get(`/e2e/runs/${json.data.id}`)).json.data.status).toBe("cancelled");
    expect((await api.get(`/e2e/runs/${fresh}`)).json.data.status).toBe("queued");
    const again = await api.create({ suite_id: "smoke", environment_label: "staging", trigger_source: "ci" });
    expect(again.response.status).toBe(201);
    const { cancelStaleRuns } = await import("../../modules/e2e/retention");
    const { loadE2EConfig } = await import("../../modules/e2e/config");
    expect(await cancelStaleRuns(app.database, loadE2EConfig(fixture.configFile), context.logger)).toEqual({
      runsCancelled: 0,
      locksCleared: 0,
    });
    for (const id of [fresh, again.json.data.id]) await api.request("POST", `/e2e/runs/${id}/cancel`);
  });
});

describe("deleting runs", () => {
  test("deleting an active run (admin bulk delete) releases its environment lock", async () => {
    const { deleteRuns } = await import("../../modules/e2e/retention");
    const active = (await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" }))
      .json.data.id;
    expect(
      (await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" })).response
        .status,
    ).toBe(409);
    // Creators waiting for the environment hear that its lock went.
    const heard: string[] = [];
    const { LOCK_CHANNEL } = await import("../../modules/e2e/notify");
    const listener = await sql.listen(LOCK_CHANNEL, (label) => heard.push(label));
    expect(await deleteRuns(app.database, context.logger, [active, "not-a-uuid"])).toBe(1);
    for (let i = 0; i < 100 && !heard.includes("plain"); i++) await Bun.sleep(50);
    expect(heard).toContain("plain");
    await listener.unlisten();
    const next = await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" });
    expect(next.response.status).toBe(201);
    await api.request("POST", `/e2e/runs/${next.json.data.id}/cancel`);
  });
});
