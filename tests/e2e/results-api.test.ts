import { describe, expect, test } from "bun:test";
import { e2eClient, lockOf as lockIn, startE2EApp, writeE2EFixture } from "./fixtures";

// Results, cancel and journey logs of a run (creation: create.test.ts).
const fixture = writeE2EFixture();
const app = await startE2EApp(fixture);
const api = e2eClient(app);
const { sql } = app.database;
const lockOf = (environment: string) => lockIn(app, environment);

describe("run ids", () => {
  test("unknown or malformed run ids answer 404 on every run route", async () => {
    for (const id of [crypto.randomUUID(), "not-a-uuid"]) {
      for (const [method, path] of [
        ["GET", `/e2e/runs/${id}`],
        ["POST", `/e2e/runs/${id}/cancel`],
        ["GET", `/e2e/runs/${id}/results`],
        ["GET", `/e2e/runs/${id}/results/dashboard/log`],
      ]) {
        const response = await api.request(method!, path!);
        expect(response.status).toBe(404);
        expect(((await response.json()) as any).error.code).toBe("not_found");
      }
      const submitted = await api.submit(id, [{ journey_id: "dashboard", status: "passed" }]);
      expect(submitted.response.status).toBe(404);
    }
  });
});

describe("results", () => {
  async function freshRun(journeys?: string[]) {
    const { response, json } = await api.create({
      suite_id: "three",
      environment_label: "plain",
      trigger_source: "ci",
      journey_ids: journeys,
    });
    expect(response.status).toBe(201);
    return json.data.id as string;
  }

  test("400 for missing, non-list, empty, unknown or duplicated journeys and bad statuses", async () => {
    const runId = await freshRun();
    const bad: unknown[] = [
      {},
      { results: null },
      { results: "x" },
      { results: [] },
      { results: [{ status: "passed" }] },
      { results: [{ journey_id: "dashboard" }] },
      { results: [{ journey_id: "dashboard", status: "great" }] },
      { results: [{ journey_id: "nope", status: "passed" }] },
      {
        results: [
          { journey_id: "dashboard", status: "running" },
          { journey_id: "dashboard", status: "passed" },
        ],
      },
      { results: [{ journey_id: "dashboard", status: "passed", duration_ms: -1 }] },
      { results: [{ journey_id: "dashboard", status: "passed", failure_step: 3 }] },
      { results: [{ journey_id: "dashboard", status: "passed", extra: 1 }] },
    ];
    for (const body of bad) {
      const response = await api.request("POST", `/e2e/runs/${runId}/results`, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as any).error.code).toBe("invalid_request");
    }
    // Nothing was written by the rejected requests.
    const results = await api.get(`/e2e/runs/${runId}/results`);
    expect(results.json.data.every((r: any) => r.status === "queued")).toBe(true);
    await api.request("POST", `/e2e/runs/${runId}/cancel`);
  });

  test("a body over 8 MiB → 413 payload_too_large; invalid JSON stays invalid_request", async () => {
    const runId = await freshRun();
    const huge = JSON.stringify({
      results: [{ journey_id: "dashboard", status: "failed", failure_reason: "x".repeat(8 * 1024 * 1024) }],
    });
    const tooLarge = await api.request("POST", `/e2e/runs/${runId}/results`, huge);
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as any).error).toMatchObject({
      code: "payload_too_large",
      details: { max_bytes: 8 * 1024 * 1024 },
    });
    const broken = await api.request("POST", `/e2e/runs/${runId}/results`, "{results:");
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as any).error.code).toBe("invalid_request");
    await api.request("POST", `/e2e/runs/${runId}/cancel`);
  });

  test("lifecycle: running sets started_at, final sets finished_at; aggregation and lock release", async () => {
    const runId = await freshRun();
    let submitted = await api.submit(runId, [{ journey_id: "dashboard", status: "running" }]);
    expect(submitted.response.status).toBe(202);
    expect(submitted.json.data).toHaveLength(3);
    const dashboard = submitted.json.data.find((r: any) => r.journey_id === "dashboard")!;
    expect(dashboard.started_at).toMatch(/Z$/);
    expect(dashboard.finished_at).toBeNull();
    expect((await api.get(`/e2e/runs/${runId}`)).json.data.status).toBe("running");

    submitted = await api.submit(runId, [
      { journey_id: "dashboard", status: "passed", duration_ms: 42, log_ref: null },
      { journey_id: "auth", status: "running" },
    ]);
    const done = submitted.json.data.find((r: any) => r.journey_id === "dashboard")!;
    expect(done).toMatchObject({ status: "passed", duration_ms: 42 });
    expect(done.finished_at).toMatch(/Z$/);
    // A final status cannot go back to running.
    const back = await api.submit(runId, [{ journey_id: "dashboard", status: "running" }]);
    expect(back.response.status).toBe(400);
    expect((await lockOf("plain"))!.run_id).toBe(runId);

    submitted = await api.submit(runId, [
      { journey_id: "auth", status: "passed" },
      { journey_id: "dashboard_again", status: "passed" },
    ]);
    expect(submitted.response.status).toBe(202);
    const run = (await api.get(`/e2e/runs/${runId}`)).json.data;
    expect(run.status).toBe("passed");
    expect(run.finished_at).toMatch(/Z$/);
    expect(await lockOf("plain")).toBeUndefined();
    // A final status may be replaced by another final status; the run follows.
    submitted = await api.submit(runId, [
      { journey_id: "auth", status: "failed", failure_step: "register_device", failure_reason: "HTTP 500" },
    ]);
    expect(submitted.response.status).toBe(202);
    expect((await api.get(`/e2e/runs/${runId}`)).json.data.status).toBe("failed");
  });

  test("a final run never reopens: a failed run stays failed while journeys change; the next create gets the environment", async () => {
    const runId = await freshRun();
    await api.submit(runId, [
      { journey_id: "dashboard", status: "failed", failure_step: "x", failure_reason: "boom" },
      { journey_id: "dashboard_again", status: "running" },
    ]);
    let run = (await api.get(`/e2e/runs/${runId}`)).json.data;
    expect(run.status).toBe("failed");
    const finishedAt = run.finished_at;
    expect(finishedAt).toMatch(/Z$/);
    expect(await lockOf("plain")).toBeUndefined();

    // The only failed journey is replaced by another final status while others still run: the
    // aggregate would be running, but the run stays failed (its lock is gone).
    const replaced = await api.submit(runId, [{ journey_id: "dashboard", status: "passed" }]);
    expect(replaced.response.status).toBe(202);
    run = (await api.get(`/e2e/runs/${runId}`)).json.data;
    expect(run).toMatchObject({ status: "failed", finished_at: finishedAt });

    // The environment is free: the next run gets it, and the old run's reports do not disturb it.
    const next = await api.create({ suite_id: "smoke", environment_label: "plain", trigger_source: "ci" });
    expect(next.response.status).toBe(201);
    expect((await lockOf("plain"))!.run_id).toBe(next.json.data.id);
    const late = await api.submit(runId, [
      { journey_id: "dashboard_again", status: "passed" },
      { journey_id: "auth", status: "running" },
    ]);
    expect(late.response.status).toBe(202);
    expect((await api.get(`/e2e/runs/${runId}`)).json.data.status).toBe("failed");
    expect((await lockOf("plain"))!.run_id).toBe(next.json.data.id);

    // Once every journey is final the run follows them to another final status.
    await api.submit(runId, [{ journey_id: "auth", status: "passed" }]);
    run = (await api.get(`/e2e/runs/${runId}`)).json.data;
    expect(run).toMatchObject({ status: "passed", finished_at: finishedAt });
    expect((await lockOf("plain"))!.run_id).toBe(next.json.data.id);
    const active =
      await sql`select count(*)::int as n from e2e_runs where environment_label = 'plain' and status in ('queued', 'running')`;
    expect(active[0]!.n).toBe(1);
    await api.request("POST", `/e2e/runs/${next.json.data.id}/cancel`);
  });

  test("aggregation rules: failed wins, then running, then blocked/skipped, all cancelled, else passed", async () => {
    const cases: [string[], string][] = [
      [["failed", "running", "passed"], "failed"],
      [["passed", "running", "skipped"], "running"],
      [["passed", "queued", "blocked"], "running"],
      [["passed", "skipped", "passed"], "blocked"],
      [["blocked", "cancelled", "passed"], "blocked"],
      [["cancelled", "cancelled", "cancelled"], "cancelled"],
      [["passed", "cancelled", "passed"], "passed"],
      [["passed", "passed", "passed"], "passed"],
    ];
    const journeys = ["dashboard", "dashboard_again", "auth"];
    for (const [statuses, expected] of cases) {
      const runId = await freshRun();
      const submitted = await api.submit(
        runId,
        statuses
          .map((status, i) => ({ journey_id: journeys[i], status }))
          .filter((r) => r.status !== "queued"),
      );
      expect(submitted.response.status).toBe(202);
      const run = (await api.get(`/e2e/runs/${runId}`)).json.data;
      expect(`${statuses.join(",")} → ${run.status}`).toBe(`${statuses.join(",")} → ${expected}`);
      const final = ["passed", "failed", "blocked", "cancelled"].includes(expected);
      expect(run.finished_at === null).toBe(!final);
      if (final) expect(await lockOf("plain")).toBeUndefined();
      else await api.request("POST", `/e2e/runs/${runId}/cancel`);
    }
  });

  test("results for a cancelled run → 400; persistence failure → 422 database_error", async () => {
    const runId = await freshRun(["dashboard"]);
    await sql`create or replace function e2e_test_fail_update() returns trigger language plpgsql as $$ begin raise exception 'hidden'; end $$`;
    await sql`create trigger e2e_test_fail_update before update on e2e_run_results for each row execute function e2e_test_fail_update()`;
    try {
      const failed = await api.submit(runId, [{ journey_id: "dashboard", status: "passed" }]);
      expect(failed.response.status).toBe(422);
      expect(failed.json.error).toEqual({ code: "database_error", message: "Failed to update results." });
    } finally {
      await sql`drop trigger e2e_test_fail_update on e2e_run_results`;
    }
    const cancelled = await api.request("POST", `/e2e/runs/${runId}/cancel`);
    expect(cancelled.status).toBe(202);
    const rejected = await api.submit(runId, [{ journey_id: "dashboard", status: "passed" }]);
    expect(rejected.response.status).toBe(400);
    expect(rejected.json.error.code).toBe("invalid_request");
  });
});

describe("cancel", () => {
  test("202: a running run becomes cancelled with its open journeys; the lock is released; a final run is unchanged", async () => {
    const { json } = await api.create({
      suite_id: "three",
      environment_label: "plain",
      trigger_source: "manual",
    });
    const runId = json.data.id;
    await api.submit(runId, [
      { journey_id: "dashboard", status: "passed" },
      { journey_id: "dashboard_again", status: "running" },
    ]);
    const response = await api.request("POST", `/e2e/runs/${runId}/cancel`);
    expect(response.status).toBe(202);
    const run = ((await response.json()) as any).data;
    expect(run.status).toBe("cancelled");
    expect(run.finished_at).toMatch(/Z$/);
    const results = (await api.get(`/e2e/runs/${runId}/results`)).json.data;
    expect(results.map((r: any) => r.status)).toEqual(["passed", "cancelled", "cancelled"]);
    expect(await lockOf("plain")).toBeUndefined();
    const again = await api.request("POST", `/e2e/runs/${runId}/cancel`);
    expect(again.status).toBe(202);
    expect(((await again.json()) as any).data).toEqual(run);

    const other = await api.create({
      suite_id: "smoke",
      environment_label: "plain",
      trigger_source: "manual",
    });
    await api.submit(other.json.data.id, [
      { journey_id: "dashboard", status: "passed" },
      { journey_id: "dashboard_again", status: "passed" },
    ]);
    const finalCancel = await api.request("POST", `/e2e/runs/${other.json.data.id}/cancel`);
    expect(((await finalCancel.json()) as any).data.status).toBe("passed");
  });

  test("persistence failure → 422 database_error without internals; the run stays as it was", async () => {
    const { json } = await api.create({
      suite_id: "smoke",
      environment_label: "plain",
      trigger_source: "ci",
    });
    const runId = json.data.id;
    await sql`create or replace function e2e_test_fail_cancel() returns trigger language plpgsql as $$ begin raise exception 'hidden cancel detail'; end $$`;
    await sql`create trigger e2e_test_fail_cancel before update on e2e_runs for each row execute function e2e_test_fail_cancel()`;
    try {
      const response = await api.request("POST", `/e2e/runs/${runId}/cancel`);
      expect(response.status).toBe(422);
      const body = (await response.json()) as any;
      expect(body.error).toEqual({ code: "database_error", message: "Failed to cancel run." });
      expect(JSON.stringify(body)).not.toContain("hidden");
    } finally {
      await sql`drop trigger e2e_test_fail_cancel on e2e_runs`;
    }
    const run = (await api.get(`/e2e/runs/${runId}`)).json.data;
    expect(run.status).toBe("queued");
    const results = (await api.get(`/e2e/runs/${runId}/results`)).json.data;
    expect(results.map((r: any) => r.status)).toEqual(["queued", "queued"]);
    expect((await lockOf("plain"))!.run_id).toBe(runId);
    expect((await api.request("POST", `/e2e/runs/${runId}/cancel`)).status).toBe(202);
    expect(await lockOf("plain")).toBeUndefined();
  });
});

describe("journey logs", () => {
  test("PUT stores the JSONL and sets log_ref; GET 200; 404 unknown result or no log; 413 too large; 410 pruned or missing", async () => {
    const { json } = await api.create({
      suite_id: "smoke",
      environment_label: "plain",
      trigger_source: "ci",
    });
    const runId = json.data.id;
    const content = `${JSON.stringify({ schema: "e2e_log.v1", level: "journey", event: "started", status: "running", journey_id: "dashboard" })}\n`;
    const put = await api.request("PUT", `/e2e/runs/${runId}/results/dashboard/log`, content, {
      "content-type": "application/x-ndjson",
    });
    expect(put.status).toBe(200);
    const stored = ((await put.json()) as any).data;
    expect(stored.log_ref).toBe(`/e2e/runs/${runId}/results/dashboard/log`);
    const results = (await api.get(`/e2e/runs/${runId}/results`)).json.data;
    expect(results.find((r: any) => r.journey_id === "dashboard").log_ref).toBe(stored.log_ref);

    const got = await api.get(`/e2e/runs/${runId}/results/dashboard/log`);
    expect(got.response.status).toBe(200);
    expect(got.json).toEqual({ data: { run_id: runId, journey_id: "dashboard", content } });

    expect((await api.get(`/e2e/runs/${runId}/results/dashboard_again/log`)).response.status).toBe(404);
    expect((await api.get(`/e2e/runs/${runId}/results/nope/log`)).response.status).toBe(404);
    expect((await api.request("PUT", `/e2e/runs/${runId}/results/nope/log`, "x")).status).toBe(404);
    const tooLarge = await api.request(
      "PUT",
      `/e2e/runs/${runId}/results/dashboard_again/log`,
      "x".repeat(5000),
    );
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as any).error.code).toBe("payload_too_large");

    // A log_ref submitted without an upload: the content is missing → 410.
    await api.submit(runId, [
      { journey_id: "dashboard_again", status: "passed", log_ref: "/tmp/elsewhere.log" },
    ]);
    const missing = await api.get(`/e2e/runs/${runId}/results/dashboard_again/log`);
    expect(missing.response.status).toBe(410);
    expect(missing.json.error.code).toBe("log_unavailable");

    await sql`update e2e_journey_logs set content = null, pruned_at = now() where run_id = ${runId}`;
    const pruned = await api.get(`/e2e/runs/${runId}/results/dashboard/log`);
    expect(pruned.response.status).toBe(410);
    expect(pruned.json.error.code).toBe("log_unavailable");
    await api.request("POST", `/e2e/runs/${runId}/cancel`);
  });
});
