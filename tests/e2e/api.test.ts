import { describe, expect, test } from "bun:test";
import {
  e2eClient,
  OTHER_RUNNER_ID,
  OTHER_RUNNER_TOKEN,
  RUNNER_ID,
  RUNNER_TOKEN,
  runnerHeaders,
  startE2EApp,
  writeE2EFixture,
} from "./fixtures";

const fixture = writeE2EFixture();
const GRACE_S = 2; // seed_pickup_grace_s (default 30), so the no-worker case ends quickly
const shortGraceFixture = writeE2EFixture({ extraConfig: `seed_pickup_grace_s: ${GRACE_S}\n` });
const app = await startE2EApp(fixture);
const api = e2eClient(app);
const { sql } = app.database;

async function lockOf(environment: string) {
  const [row] =
    await sql`select run_id::text as run_id from e2e_environment_locks where environment_label = ${environment}`;
  return row;
}

describe("runner credentials", () => {
  test("missing or wrong credentials answer 401 unauthorized on every route", async () => {
    const cases: Record<string, string>[] = [
      {},
      { "x-e2e-runner-id": RUNNER_ID },
      { authorization: `Bearer ${RUNNER_TOKEN}` },
      { "x-e2e-runner-id": RUNNER_ID, authorization: "Bearer wrong-token-wrong-token-wrong-token-00" },
      { "x-e2e-runner-id": RUNNER_ID, authorization: "Bearer short" },
      { "x-e2e-runner-id": "unknown-runner", authorization: `Bearer ${RUNNER_TOKEN}` },
      { "x-e2e-runner-id": "-bad id", authorization: `Bearer ${RUNNER_TOKEN}` },
      { "x-e2e-runner-id": OTHER_RUNNER_ID, authorization: `Bearer ${RUNNER_TOKEN}` },
      { "x-e2e-runner-id": RUNNER_ID, authorization: `Basic ${RUNNER_TOKEN}` },
    ];
    const routes = [
      ["GET", "/e2e/suites"],
      ["GET", "/e2e/runs"],
      // A bad query is not checked before the credentials (a schema would answer 400 first).
      ["GET", "/e2e/runs?limit=0"],
      ["GET", "/e2e/runs?limit=abc&status=x"],
      ["POST", "/e2e/runs"],
      ["GET", `/e2e/runs/${crypto.randomUUID()}`],
      ["POST", `/e2e/runs/${crypto.randomUUID()}/cancel`],
      ["GET", `/e2e/runs/${crypto.randomUUID()}/results`],
      ["POST", `/e2e/runs/${crypto.randomUUID()}/results`],
      ["GET", `/e2e/runs/${crypto.randomUUID()}/results/dashboard/log`],
      ["PUT", `/e2e/runs/${crypto.randomUUID()}/results/dashboard/log`],
    ];
    for (const headers of cases) {
      for (const [method, path] of routes) {
        const response = await app.fetch(path!, {
          method,
          headers: { "content-type": "application/json", ...headers },
          body: method === "GET" ? undefined : "{}",
        });
        expect(response.status).toBe(401);
        const body = (await response.json()) as any;
        expect(body.error.code).toBe("unauthorized");
        expect(typeof body.error.message).toBe("string");
      }
    }
  });

  test("an operator API token is not a runner credential", async () => {
    const token = await app.token("admin");
    const response = await app.fetch("/e2e/suites", {
      headers: { authorization: `Bearer ${token}`, "x-e2e-runner-id": RUNNER_ID },
    });
    expect(response.status).toBe(401);
  });

  test("a runner whose token comes from env: works, lowercase bearer accepted, runner id recorded", async () => {
    const response = await app.fetch("/e2e/runs", {
      method: "POST",
      headers: {
        "x-e2e-runner-id": OTHER_RUNNER_ID,
        authorization: `bearer ${OTHER_RUNNER_TOKEN}`,
        "x-e2e-protocol-version": "1",
        "content-type": "application/json",
      },
      body: JSON.stringify({ suite_id: "smoke", environment_label: "plain", trigger_source: "manual" }),
    });
    expect(response.status).toBe(201);
    const { data } = (await response.json()) as any;
    const [row] = await sql`select runner_id from e2e_runs where id = ${data.id}`;
    expect(row!.runner_id).toBe(OTHER_RUNNER_ID);
    await api.request("POST", `/e2e/runs/${data.id}/cancel`);
  });
});

describe("suites and reads", () => {
  test("GET /e2e/suites lists suites sorted by id with their journeys", async () => {
    const { response, json } = await api.get("/e2e/suites");
    expect(response.status).toBe(200);
    expect(json.data.map((s: any) => s.id)).toEqual([
      "broken_action",
      "broken_expect",
      "missing_file",
      "smoke",
      "three",
    ]);
    expect(json.data.find((s: any) => s.id === "smoke").journey_ids).toEqual([
      "dashboard",
      "dashboard_again",
    ]);
  });

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

describe("GET /e2e/runs", () => {
  test("filters status, suite_id, environment_label, trigger_source; newest first; limit 1–500 else 400", async () => {
    // Four runs in the otherwise unused `bench` environment, one after another (each made final).
    const made: { id: string; suite: string; trigger: string; status: string }[] = [];
    for (const [suite, trigger, status] of [
      ["smoke", "ci", "passed"],
      ["three", "manual", "failed"],
      ["smoke", "manual", "cancelled"],
      ["smoke", "ci", "failed"],
    ] as const) {
      const { response, json } = await api.create({
        suite_id: suite,
        environment_label: "bench",
        trigger_source: trigger,
      });
      expect(response.status).toBe(201);
      const id = json.data.id as string;
      if (status === "cancelled") await api.request("POST", `/e2e/runs/${id}/cancel`);
      else await api.submit(id, [{ journey_id: "dashboard", status }]);
      if (status === "passed") await api.submit(id, [{ journey_id: "dashboard_again", status: "passed" }]);
      made.push({ id, suite, trigger, status });
      await Bun.sleep(5); // distinct started_at
    }
    const newestFirst = [...made].reverse();
    const ids = async (query: string) => {
      const { response, json } = await api.get(`/e2e/runs?environment_label=bench${query}`);
      expect(response.status).toBe(200);
      return json.data.map((r: any) => r.id);
    };
    expect(await ids("")).toEqual(newestFirst.map((r) => r.id));
    expect(await ids("&status=failed")).toEqual(
      newestFirst.filter((r) => r.status === "failed").map((r) => r.id),
    );
    expect(await ids("&suite_id=smoke")).toEqual(
      newestFirst.filter((r) => r.suite === "smoke").map((r) => r.id),
    );
    expect(await ids("&trigger_source=manual")).toEqual(
      newestFirst.filter((r) => r.trigger === "manual").map((r) => r.id),
    );
    expect(await ids("&suite_id=smoke&trigger_source=ci&status=failed")).toEqual([made[3]!.id]);
    expect(await ids("&status=queued")).toEqual([]);
    expect(await ids("&limit=1")).toEqual([made[3]!.id]);
    expect(await ids("&limit=500")).toHaveLength(4);
    // Newest first across environments too, and the default limit of 50.
    const all = (await api.get("/e2e/runs")).json.data as any[];
    expect(all.length).toBeLessThanOrEqual(50);
    const times = all.map((r) => Date.parse(r.started_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    for (const bad of ["0", "501", "abc", "-1", "1.5", ""]) {
      const { response, json } = await api.get(`/e2e/runs?limit=${bad}`);
      expect(`limit=${bad} → ${response.status}`).toBe(`limit=${bad} → 400`);
      expect(json.error).toMatchObject({ code: "invalid_request", details: { field: "limit" } });
    }
    const twice = await api.get("/e2e/runs?status=failed&status=passed");
    expect(twice.response.status).toBe(400);
    expect(twice.json.error.details.field).toBe("status");
  });
});

describe("POST /e2e/runs validation, in the documented order", () => {
  const valid = { suite_id: "smoke", environment_label: "plain", trigger_source: "ci" };

  test("body shape: legacy and unknown properties, required fields, trigger_source, types → 400 naming the field", async () => {
    // Legacy fields and the environment come before the protocol header: 400 even without one.
    const beforeProtocol: [unknown, string][] = [
      [{ ...valid, client_version: "1.0.0" }, "client_version"],
      [{ ...valid, server_version: "1.0.0" }, "server_version"],
      [{ suite_id: "smoke", trigger_source: "ci" }, "environment_label"],
      [{ ...valid, environment_label: 7 }, "environment_label"],
      // Legacy fields come first even with other problems.
      [{ client_version: "1", colour: "x" }, "client_version"],
    ];
    // The rest of the shape is checked after the protocol header, so these carry a supported one.
    const afterProtocol: [unknown, string][] = [
      [{ ...valid, colour: "blue" }, "colour"],
      [{ environment_label: "plain", trigger_source: "ci" }, "suite_id"],
      [{ suite_id: "smoke", environment_label: "plain" }, "trigger_source"],
      [{ ...valid, trigger_source: "nightly" }, "trigger_source"],
      [{ ...valid, suite_id: 7 }, "suite_id"],
      [{ ...valid, suite_id: "   " }, "suite_id"],
      [{ ...valid, journey_ids: "dashboard" }, "journey_ids"],
      [{ ...valid, journey_ids: [1] }, "journey_ids"],
      [{ ...valid, idempotency_key: 5 }, "idempotency_key"],
      [{ ...valid, metadata: ["x"] }, "metadata"],
      [{ ...valid, metadata: { blob: "x".repeat(17 * 1024) } }, "metadata"],
    ];
    const cases = [
      ...beforeProtocol.map(([body, field]) => [body, field, ""] as const),
      ...afterProtocol.map(([body, field]) => [body, field, "1"] as const),
    ];
    for (const [body, field, protocol] of cases) {
      const { response, json } = await api.create(body as Record<string, unknown>, {
        "x-e2e-protocol-version": protocol,
      });
      expect(`${JSON.stringify(body).slice(0, 80)} → ${response.status} ${json.error?.details?.field}`).toBe(
        `${JSON.stringify(body).slice(0, 80)} → 400 ${field}`,
      );
      expect(json.error.code).toBe("invalid_request");
      expect(json.error.message).toContain(field);
    }
    const multi = await api.create({ client_version: "1", colour: "x" });
    expect(multi.json.error.details.errors.map((e: any) => e.field)).toEqual([
      "client_version",
      "colour",
      "suite_id",
      "environment_label",
      "trigger_source",
    ]);
  });

  test("a body that is not a JSON object, or not JSON at all, is invalid_request", async () => {
    for (const raw of ["[]", '"text"', "{not json", ""]) {
      const response = await api.request("POST", "/e2e/runs", raw);
      expect(response.status).toBe(400);
      expect(((await response.json()) as any).error.code).toBe("invalid_request");
    }
  });

  test("an unsupported protocol version wins over the body's shape: missing suite_id with version 9 → 422 protocol_mismatch", async () => {
    for (const body of [
      { environment_label: "plain", trigger_source: "ci" },
      { ...valid, colour: "blue", trigger_source: "nightly" },
    ]) {
      const { response, json } = await api.create(body, { "x-e2e-protocol-version": "9" });
      expect(response.status).toBe(422);
      expect(json.error.code).toBe("protocol_mismatch");
    }
  });

  test("environment policy comes before the protocol header", async () => {
    const { response, json } = await api.create(
      { ...valid, environment_label: "production" },
      { "x-e2e-protocol-version": "9" },
    );
    expect(response.status).toBe(400);
    expect(json.error.code).toBe("invalid_request");
    expect(json.error.message).toContain("production");
  });

  test("protocol header missing or unsupported → 422 protocol_mismatch, before suite checks", async () => {
    for (const header of [undefined, "", "2", "1.0"]) {
      const headers: Record<string, string> =
        header === undefined ? {} : { "x-e2e-protocol-version": header };
      const response = await app.fetch("/e2e/runs", {
        method: "POST",
        headers: {
          "x-e2e-runner-id": RUNNER_ID,
          authorization: `Bearer ${RUNNER_TOKEN}`,
          "content-type": "application/json",
          ...headers,
        },
        body: JSON.stringify({ ...valid, suite_id: "no_such_suite" }),
      });
      expect(response.status).toBe(422);
      expect(((await response.json()) as any).error.code).toBe("protocol_mismatch");
    }
  });

  test("unknown suite, journeys outside the suite or listed twice → 400 invalid_request, before the registry", async () => {
    let result = await api.create({ ...valid, suite_id: "no_such_suite" });
    expect(result.response.status).toBe(400);
    expect(result.json.error.code).toBe("invalid_request");
    result = await api.create({
      ...valid,
      suite_id: "broken_action",
      journey_ids: ["bad_action", "dashboard"],
    });
    expect(result.response.status).toBe(400);
    expect(result.json.error.code).toBe("invalid_request");
    expect(result.json.error.details.invalid).toEqual(["dashboard"]);
    result = await api.create({ ...valid, journey_ids: ["dashboard", "dashboard"] });
    expect(result.json.error.code).toBe("invalid_request");
  });

  test("unregistered action, wrong expect or missing journey file → 400 invalid_action_expectation", async () => {
    for (const suite of ["broken_action", "broken_expect", "missing_file"]) {
      const { response, json } = await api.create({ ...valid, suite_id: suite });
      expect(response.status).toBe(400);
      expect(json.error.code).toBe("invalid_action_expectation");
      expect(typeof json.error.details.journey_id).toBe("string");
    }
    const bad = await api.create({ ...valid, suite_id: "broken_expect" });
    expect(bad.json.error.message).toBe(
      "Journey 'bad_expect' action 'fetch_dashboard' does not allow expect 'something_else'.",
    );
    // Selecting only the good journey of that suite is fine.
    const ok = await api.create({ ...valid, suite_id: "broken_expect", journey_ids: ["dashboard"] });
    expect(ok.response.status).toBe(201);
    await api.request("POST", `/e2e/runs/${ok.json.data.id}/cancel`);
  });
});

describe("create, lock and seed", () => {
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

  test("a create with a key another request is still creating (seeding) waits for it and replays its run", async () => {
    const body = {
      suite_id: "smoke",
      environment_label: "paced",
      trigger_source: "ci",
      idempotency_key: `paced-${crypto.randomUUID()}`,
    };
    const first = api.create(body);
    await Bun.sleep(300); // the first holds the lock and is seeding (1 s)
    const [lock] =
      await sql`select idempotency_key, run_id from e2e_environment_locks where environment_label = 'paced'`;
    expect(lock).toEqual({ idempotency_key: body.idempotency_key, run_id: null });
    const started = Date.now();
    const second = await api.create(body);
    const created = await first;
    expect(created.response.status).toBe(201);
    expect(second.response.status).toBe(200);
    expect(second.response.headers.get("idempotent-replayed")).toBe("true");
    expect(second.json.data.id).toBe(created.json.data.id);
    // It waited for the first to commit, not for its own seed or the whole wait budget.
    expect(Date.now() - started).toBeLessThan(5000);
    // Another key meanwhile: the environment is locked by that run.
    const other = await api.create({ ...body, idempotency_key: `other-${crypto.randomUUID()}` });
    expect(other.response.status).toBe(409);
    await api.request("POST", `/e2e/runs/${created.json.data.id}/cancel`);
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
    const [jobRun] =
      await sql`select status from job_runs where task_identifier = 'e2e_seed' order by started_at desc limit 1`;
    expect(jobRun!.status).toBe("failed");
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
