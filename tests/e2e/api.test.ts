import { describe, expect, test } from "bun:test";
import {
  e2eClient,
  OTHER_RUNNER_ID,
  OTHER_RUNNER_TOKEN,
  RUNNER_ID,
  RUNNER_TOKEN,
  startE2EApp,
  writeE2EFixture,
} from "./fixtures";

const fixture = writeE2EFixture();
const app = await startE2EApp(fixture);
const api = e2eClient(app);
const { sql } = app.database;

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
    // A filter given twice: the last value counts (docs/api.md), as for every query parameter.
    const twice = await api.get("/e2e/runs?status=queued&status=failed");
    expect(twice.response.status).toBe(200);
    const failed = await api.get("/e2e/runs?status=failed");
    const idsOf = (reply: typeof failed) => reply.json.data.map((r: { id: string }) => r.id);
    expect(idsOf(twice)).toEqual(idsOf(failed));
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
});
