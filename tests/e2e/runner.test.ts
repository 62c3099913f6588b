import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { loadE2EConfig } from "../../modules/e2e/config";
import { validateJourney } from "../../modules/e2e/journeys";
import { redact } from "../../modules/e2e/redaction";
import { ACTION_EXPECTS } from "../../modules/e2e/registry";
import { RUNNER_ACTIONS } from "../../modules/e2e/runner/actions";
import { ActionHttp } from "../../modules/e2e/runner/http";
import {
  e2eClient,
  journeysWithOnlyDashboard,
  OTHER_RUNNER_ID,
  OTHER_RUNNER_TOKEN,
  RUNNER_ID,
  RUNNER_TOKEN,
  runnerCli,
  startE2EApp,
  writeE2EFixture,
} from "./fixtures";
import { parseJUnit } from "./junit-schema";

const fixture = writeE2EFixture();
const app = await startE2EApp(fixture);
const api = e2eClient(app);
const ROOT = path.resolve(import.meta.dir, "../..");

const { outpost, finish } = runnerCli(app, fixture);

describe("the registry and the runner agree", () => {
  test("the runner implements exactly the registered actions with their expects", () => {
    expect(Object.fromEntries(Object.entries(RUNNER_ACTIONS).map(([a, impl]) => [a, impl.expect]))).toEqual({
      ...ACTION_EXPECTS,
    });
  });

  test("a harness step (the system suite's) is never run by this runner: it fails, naming who runs it", async () => {
    const run = RUNNER_ACTIONS.harness_step!.run({
      http: new ActionHttp("http://127.0.0.1:9", new AbortController().signal),
      operatorToken: undefined,
      state: { claimedCommandIds: [] },
      data: {},
    });
    await expect(run).rejects.toMatchObject({
      code: "PRECONDITION_FAILED",
      message: expect.stringContaining("npm run test:system"),
    });
  });

  test("the repo's e2e/config.yaml is valid and every suite's journeys pass the registry", () => {
    const config = loadE2EConfig(path.join(ROOT, "e2e/config.yaml"), {
      OUTPOST_E2E_RUNNER_TOKEN: "x".repeat(40),
    });
    expect([...config.suites.keys()].sort()).toEqual(["runtime", "smoke", "system"]);
    for (const journeys of config.suites.values())
      for (const j of journeys)
        expect(validateJourney(config.journeysDir, j).steps.length).toBeGreaterThan(0);
  });

  test("body previews never carry a secret: JSON from its redacted form, other text with secret pairs masked", async () => {
    const secret = "device-token-SECRET-0123456789abcdef";
    const pad = "x".repeat(600);
    const bodies: Record<string, [string, string]> = {
      "/json": ["application/json", JSON.stringify({ data: { id: "d1", api_token: secret, note: "ok" } })],
      // Beyond the 500-byte preview: the raw cut would end inside the token.
      "/long": ["application/json", `{"data":{"pad":"${"y".repeat(470)}","api_token":"${secret}"}}`],
      "/text": ["text/plain", `{"api_token": "${secret}", "password":"${secret}"} ${pad}`],
      "/html": ["text/html", `<pre>{&quot;x&quot;:1} "secret_key":"${secret}" Bearer ${secret}</pre>`],
      "/cut": ["text/plain", `${"z".repeat(480)} {"access_token":"${secret}"}`],
    };
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(request) {
        const [type, body] = bodies[new URL(request.url).pathname]!;
        return new Response(body, { headers: { "content-type": type } });
      },
    });
    try {
      const http = new ActionHttp(`http://127.0.0.1:${server.port}`, new AbortController().signal);
      for (const pathname of Object.keys(bodies)) await http.request("GET", pathname, { expect: [200] });
      expect(http.traces).toHaveLength(5);
      for (const trace of http.traces) {
        expect(JSON.stringify(trace)).not.toContain("SECRET");
        expect(JSON.stringify(trace)).not.toContain("device-token");
        expect(trace.body_preview!.length).toBeLessThanOrEqual(500);
      }
      expect(http.traces[0]!.body_preview).toBe('{"data":{"id":"d1","api_token":"[REDACTED]","note":"ok"}}');
      expect(http.traces[2]!.body_preview).toStartWith(
        '{"api_token": "[REDACTED]", "password":"[REDACTED]"}',
      );
    } finally {
      server.stop(true);
    }
  });

  test("log redaction hides secret-looking keys and api_key query values", () => {
    expect(
      redact({ api_token: "abc", nested: { Authorization: "Bearer x", ok: "/x?api_key=secret&y=1" } }),
    ).toEqual({
      api_token: "[REDACTED]",
      nested: { Authorization: "[REDACTED]", ok: "/x?api_key=[REDACTED]&y=1" },
    });
  });
});

describe("outpost e2e", () => {
  test("suites lists the server's suites; bad credentials exit 2", async () => {
    const listed = await finish(outpost(["suites"]));
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("smoke: dashboard, dashboard_again");
    const denied = await finish(
      outpost(["suites"], { env: { OUTPOST_E2E_RUNNER_TOKEN: "wrong-token-wrong-token-wrong-token-wrong" } }),
    );
    expect(denied.code).toBe(2);
    expect(denied.stderr).toContain("unauthorized");
  }, 30_000);

  test("run: a passing suite exits 0, writes e2e_log.v1 JSONL locally, uploads it and prints JSON", async () => {
    const result = await finish(
      outpost([
        "run",
        "--suite",
        "smoke",
        "--env",
        "plain",
        "--trigger",
        "ci",
        "--json",
        "--log-dir",
        "logs",
      ]),
    );
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.status).toBe("passed");
    expect(summary.journeys.map((j: any) => [j.journey_id, j.status])).toEqual([
      ["dashboard", "passed"],
      ["dashboard_again", "passed"],
    ]);
    const files = readdirSync(path.join(fixture.dir, "logs", summary.run_id)).sort();
    expect(files).toEqual(["001-dashboard.jsonl", "002-dashboard_again.jsonl"]);
    const lines = readFileSync(path.join(fixture.dir, "logs", summary.run_id, files[1]!), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.level, l.event ?? l.status])).toEqual([
      ["journey", "started"],
      ["step", "passed"],
      ["journey", "completed"],
    ]);
    expect(lines.every((l) => l.schema === "e2e_log.v1")).toBe(true);
    expect(lines[0].run.run_id).toBe(summary.run_id);
    expect(lines[1]).toMatchObject({
      step_id: "second_look",
      action: "fetch_dashboard",
      expect: "dashboard_payload",
      http_status: 200,
      response_type: "json_response",
    });
    expect(lines[2]).toMatchObject({ steps_run: 1, steps_passed: 1, steps_failed: 0, status: "passed" });
    const uploaded = await api.get(`/e2e/runs/${summary.run_id}/results/dashboard_again/log`);
    expect(uploaded.response.status).toBe(200);
    expect(uploaded.json.data.content).toBe(
      readFileSync(path.join(fixture.dir, "logs", summary.run_id, files[1]!), "utf8"),
    );
    const results = (await api.get(`/e2e/runs/${summary.run_id}/results`)).json.data;
    expect(results.every((r: any) => r.started_at && r.finished_at && r.log_ref)).toBe(true);
    // Reusing the key of a finished run replays it without executing anything.
  }, 30_000);

  test("run: a failing journey makes the run failed and the exit code 1; the summary names the step", async () => {
    const journeysDir = journeysWithOnlyDashboard(fixture, "runner-journeys");
    const result = await finish(
      outpost([
        "run",
        "--suite",
        "smoke",
        "--env",
        "plain",
        "--journeys-dir",
        journeysDir,
        "--log-dir",
        "logs",
      ]),
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("Run failed");
    expect(result.stdout).toContain("at load_journey");
    const runId = /E2E run ([0-9a-f-]{36})/.exec(result.stdout)![1]!;
    const results = (await api.get(`/e2e/runs/${runId}/results`)).json.data;
    expect(results.map((r: any) => r.status)).toEqual(["passed", "failed"]);
    expect(results[1].failure_step).toBe("load_journey");
  }, 30_000);

  test("run: an idempotency key of a finished run replays it (exit by its status); API errors exit 2", async () => {
    const first = await finish(
      outpost(["run", "--suite", "smoke", "--env", "local", "--idempotency-key", "build-7", "--json"]),
    );
    expect(first.code).toBe(0);
    const again = await finish(
      outpost(["run", "--suite", "smoke", "--env", "local", "--idempotency-key", "build-7", "--json"]),
    );
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      run_id: JSON.parse(first.stdout).run_id,
      replayed: true,
    });
    const refused = await finish(outpost(["run", "--suite", "smoke", "--env", "production"]));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("invalid_request");
  }, 30_000);

  test("run: Ctrl-C stops the current step, cancels the run and exits 130", async () => {
    // A loopback proxy in front of the app that makes /readyz (the dashboard step) hang.
    const proxy = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(request) {
        const url = new URL(request.url);
        if (url.pathname === "/readyz") await Bun.sleep(20_000);
        const body =
          request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer();
        return fetch(`${app.url}${url.pathname}${url.search}`, {
          method: request.method,
          headers: request.headers,
          body,
        });
      },
    });
    try {
      const proc = outpost(["run", "--suite", "smoke", "--env", "staging", "--json"], {
        apiUrl: `http://127.0.0.1:${proxy.port}`,
      });
      const decoder = new TextDecoder();
      let stderr = "";
      const reader = proc.stderr.getReader();
      while (!stderr.includes("… dashboard")) {
        const { value, done } = await reader.read();
        if (done) break;
        stderr += decoder.decode(value);
      }
      await Bun.sleep(200);
      proc.kill("SIGINT");
      const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      expect(code).toBe(130);
      const summary = JSON.parse(stdout);
      expect(summary.status).toBe("cancelled");
      const results = (await api.get(`/e2e/runs/${summary.run_id}/results`)).json.data;
      expect(results.map((r: any) => r.status)).toEqual(["cancelled", "cancelled"]);
      const locked = await app.database
        .sql`select 1 from e2e_environment_locks where environment_label = 'staging'`;
      expect(locked.length).toBe(0);
    } finally {
      proxy.stop(true);
    }
  }, 30_000);

  test("run: --journeys runs a subset in the given order; flags win over the environment's credentials", async () => {
    const result = await finish(
      outpost(
        [
          "run",
          "--suite",
          "three",
          "--env",
          "plain",
          "--journeys",
          "auth, dashboard",
          "--runner-id",
          RUNNER_ID,
          "--runner-token",
          RUNNER_TOKEN,
          "--json",
          "--log-dir",
          "logs",
        ],
        {
          env: {
            OUTPOST_E2E_RUNNER_ID: "nobody",
            OUTPOST_E2E_RUNNER_TOKEN: "wrong-token-wrong-token-wrong-token-wrong",
          },
        },
      ),
    );
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.journeys.map((j: any) => [j.journey_id, j.status])).toEqual([
      ["auth", "passed"],
      ["dashboard", "passed"],
    ]);
    const run = (await api.get(`/e2e/runs/${summary.run_id}`)).json.data;
    expect(run.journey_ids).toEqual(["auth", "dashboard"]);
    expect(readdirSync(path.join(fixture.dir, "logs", summary.run_id)).sort()).toEqual([
      "001-auth.jsonl",
      "002-dashboard.jsonl",
    ]);
    // The device token registration may return is not in the log.
    for (const file of readdirSync(path.join(fixture.dir, "logs", summary.run_id)))
      expect(readFileSync(path.join(fixture.dir, "logs", summary.run_id, file), "utf8")).not.toMatch(
        /"api_token\\?"\s*:\s*\\?"(?!\[REDACTED\])/,
      );
    const [row] = await app.database.sql`select runner_id from e2e_runs where id = ${summary.run_id}`;
    expect(row!.runner_id).toBe(RUNNER_ID);
  }, 30_000);

  test("run: credentials come from OUTPOST_E2E_RUNNER_ID / OUTPOST_E2E_RUNNER_TOKEN when no flag is given", async () => {
    const result = await finish(
      outpost(["run", "--suite", "smoke", "--env", "plain", "--journeys", "dashboard", "--json"], {
        env: { OUTPOST_E2E_RUNNER_ID: OTHER_RUNNER_ID, OUTPOST_E2E_RUNNER_TOKEN: OTHER_RUNNER_TOKEN },
      }),
    );
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout);
    const [row] = await app.database.sql`select runner_id from e2e_runs where id = ${summary.run_id}`;
    expect(row!.runner_id).toBe(OTHER_RUNNER_ID);
    const missing = await finish(
      outpost(["run", "--suite", "smoke", "--env", "plain"], {
        env: { OUTPOST_E2E_RUNNER_ID: "", OUTPOST_E2E_RUNNER_TOKEN: "" },
      }),
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("OUTPOST_E2E_RUNNER_ID");
  }, 30_000);

  /** A TCP proxy to the app that, once `failing` matches a request's first bytes, drops the connection. */
  function droppingProxy(failing: RegExp) {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((client) => {
      const upstream = net.connect(Number(new URL(app.url).port), "127.0.0.1");
      sockets.add(client).add(upstream);
      client.on("data", (chunk) => {
        if (failing.test(chunk.toString("latin1"))) {
          client.destroy();
          upstream.destroy();
        } else upstream.write(chunk);
      });
      upstream.pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on("error", close).on("close", close);
      upstream.on("error", close).on("close", close);
    });
    return new Promise<{ url: string; stop(): void }>((resolve) =>
      server.listen(0, "127.0.0.1", () =>
        resolve({
          url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
          stop() {
            server.close();
            for (const socket of sockets) socket.destroy();
          },
        }),
      ),
    );
  }

  test("run: the connection to the server fails mid-run → the run is cancelled, one clear line, exit 2", async () => {
    // Every log upload dies at the network level; creating, reporting and cancelling still work.
    const proxy = await droppingProxy(/^PUT \/e2e\/runs\//);
    try {
      const result = await finish(
        outpost(["run", "--suite", "smoke", "--env", "staging", "--json", "--junit", "reports/broken.xml"], {
          apiUrl: proxy.url,
        }),
      );
      expect(result.code).toBe(2);
      const runId = /E2E run ([0-9a-f-]{36}) created/.exec(result.stderr)![1]!;
      // The JUnit report says what this runner saw: the journey it ran, the rest not run, and why.
      const report = parseJUnit(readFileSync(path.join(fixture.dir, "reports/broken.xml"), "utf8"));
      const suite = report.children[0]!;
      expect(suite.attributes).toMatchObject({ id: runId, errors: "1", tests: "3" });
      const testcases = suite.children.filter((c) => c.name === "testcase");
      expect(testcases.map((c) => [c.attributes.name, c.children[0]?.name])).toEqual([
        ["run", "error"],
        ["dashboard", "system-out"],
        ["dashboard_again", "skipped"],
      ]);
      expect(testcases[0]!.children[0]!.attributes.message).toContain("the run was cancelled");
      const lines = result.stderr.split("\n").filter((l) => l.startsWith("outpost e2e:"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`run ${runId} stopped:`);
      expect(lines[0]).toContain("the run was cancelled");
      expect(result.stderr).not.toContain("error:"); // no stack trace / unhandled rejection
      const run = (await api.get(`/e2e/runs/${runId}`)).json.data;
      expect(run.status).toBe("cancelled");
      const locked = await app.database
        .sql`select 1 from e2e_environment_locks where environment_label = 'staging'`;
      expect(locked).toHaveLength(0);
    } finally {
      proxy.stop();
    }
  }, 30_000);

  test("run: the server disappears mid-run → exit 2 with one line saying the run could not be cancelled", async () => {
    const proxy = await droppingProxy(/^(PUT \/e2e\/runs\/|POST \/e2e\/runs\/[^/ ]+\/cancel)/);
    try {
      const result = await finish(
        outpost(["run", "--suite", "smoke", "--env", "staging"], { apiUrl: proxy.url }),
      );
      expect(result.code).toBe(2);
      const runId = /E2E run ([0-9a-f-]{36}) created/.exec(result.stderr)![1]!;
      expect(result.stderr).toContain("could not be cancelled");
      // The run really is still active; clean up for the other tests.
      expect((await api.get(`/e2e/runs/${runId}`)).json.data.status).toBe("running");
      await api.request("POST", `/e2e/runs/${runId}/cancel`);
    } finally {
      proxy.stop();
    }
  }, 30_000);
});
