import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createTestDatabase } from "../helpers/database";
import { REPO, runOutpost, startOutpostProcess } from "../helpers/process";

// The platform's own `runtime` suite (e2e/config.yaml) against a real `./outpost start` process,
// the way docs/e2e.md tells CI to run it: the server reads the runner token from
// OUTPOST_E2E_RUNNER_TOKEN, the operator token comes from `./outpost token create`, and
// `./outpost e2e run` drives the device API, JSON:API approval and commands, and telemetry.
// The only difference from the doc: the process uses the test PostgreSQL (DATABASE_URL).
const RUNNER_TOKEN = "runtime-suite-runner-token-0123456789abcdef";
const database = await createTestDatabase();
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-runtime-data-"));
const logDir = mkdtempSync(path.join(tmpdir(), "outpost-runtime-logs-"));
const serverEnv = {
  DATABASE_URL: database.url,
  DATA_DIR: dataDir,
  SECRET_KEY: "runtime-suite-secret-key-0123456789abcdef",
  LOG_LEVEL: "warn",
};
const server = await startOutpostProcess(
  {
    ...serverEnv,
    E2E_ENABLED: "true",
    E2E_CONFIG: "e2e/config.yaml",
    OUTPOST_E2E_RUNNER_TOKEN: RUNNER_TOKEN,
  },
  60_000,
);

/** An api_token value that is not redacted, in a log line (also inside an escaped JSON preview). */
const CLEAR_TOKEN = /"api_token\\?"\s*:\s*\\?"(?!\[REDACTED\])/;

describe("the repo's runtime suite", () => {
  test("./outpost e2e run --suite runtime passes against `./outpost start`; its logs hold no device token", async () => {
    const created = await runOutpost(["token", "create", "--name", "e2e", "--role", "operator"], serverEnv);
    expect(created.code).toBe(0);
    const operatorToken = created.stdout.trim();
    expect(operatorToken.length).toBeGreaterThanOrEqual(32);
    for (const [suite, environment] of [
      ["runtime", "ci"],
      ["smoke", "local"],
    ] as const) {
      const proc = Bun.spawn(
        [
          path.join(REPO, "outpost"),
          "e2e",
          "run",
          "--suite",
          suite,
          "--env",
          environment,
          "--trigger",
          "ci",
          "--json",
          "--api-url",
          server.url,
          "--log-dir",
          logDir,
        ],
        {
          cwd: REPO,
          env: {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            OUTPOST_E2E_RUNNER_ID: "local-runner",
            OUTPOST_E2E_RUNNER_TOKEN: RUNNER_TOKEN,
            OUTPOST_API_TOKEN: operatorToken,
          },
          stdout: "pipe",
          stderr: "pipe",
        },
      );
      const [stdout, stderr, code] = await Promise.all([
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
        proc.exited,
      ]);
      const summary = JSON.parse(stdout || "{}");
      if (code !== 0) console.error(stderr, JSON.stringify(summary, null, 2), server.output());
      expect(summary.status).toBe("passed");
      expect(code).toBe(0);
      if (suite !== "runtime") continue;
      expect(
        summary.journeys.map((j: { journey_id: string; status: string }) => `${j.journey_id}:${j.status}`),
      ).toEqual(["runtime_transport_contract:passed", "runtime_transport_negative:passed"]);

      // runtime_approve_device re-registers the approved device, whose reply carries its api_token:
      // neither the local JSONL nor the uploaded copy may hold it in clear.
      const files = readdirSync(path.join(logDir, summary.run_id));
      let approveSteps = 0;
      for (const file of files) {
        const local = readFileSync(path.join(logDir, summary.run_id, file), "utf8");
        const journeyId = file.replace(/^\d+-/, "").replace(/\.jsonl$/, "");
        const uploaded = await fetch(`${server.url}/e2e/runs/${summary.run_id}/results/${journeyId}/log`, {
          headers: { "x-e2e-runner-id": "local-runner", authorization: `Bearer ${RUNNER_TOKEN}` },
        }).then((r) => r.json() as Promise<{ data: { content: string } }>);
        expect(uploaded.data.content).toBe(local);
        for (const line of local.trim().split("\n")) {
          expect(line).not.toMatch(CLEAR_TOKEN);
          const entry = JSON.parse(line);
          if (entry.action !== "runtime_approve_device") continue;
          approveSteps += 1;
          expect(entry.action_data.body_json.data.api_token).toBe("[REDACTED]");
          // The preview is cut from the redacted body (the token may lie past its end).
          expect(JSON.stringify(entry.action_data.body_json)).toStartWith(entry.action_data.body_preview);
        }
      }
      expect(approveSteps).toBeGreaterThan(0);
    }
    // Every journey deletes the device it registered (runtime_cleanup): the fleet keeps no test device,
    // not even the smoke suite's pending one.
    const left = await database.sql`select product_name, approval_status from devices`;
    expect(left.map((d) => [d.product_name, d.approval_status])).toEqual([]);
    expect(await server.interrupt()).toBe(0);
    rmSync(logDir, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  }, 120_000);
});
