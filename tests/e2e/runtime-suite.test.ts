import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startTestApp } from "../helpers/app";

// The platform's own `runtime` suite (e2e/config.yaml) against a real Outpost: device API,
// JSON:API approval and commands, telemetry — driven by `./outpost e2e run` as CI does.
const ROOT = path.resolve(import.meta.dir, "../..");
const RUNNER_TOKEN = "runtime-suite-runner-token-0123456789abcdef";
process.env.OUTPOST_E2E_RUNNER_TOKEN = RUNNER_TOKEN;
const app = await startTestApp({ E2E_ENABLED: "true", E2E_CONFIG: path.join(ROOT, "e2e/config.yaml") });
const logDir = mkdtempSync(path.join(tmpdir(), "outpost-runtime-logs-"));

describe("the repo's runtime suite", () => {
  test("./outpost e2e run --suite runtime passes against a running Outpost", async () => {
    const operatorToken = await app.token("operator");
    for (const suite of ["runtime", "smoke"]) {
      const proc = Bun.spawn(
        [
          path.join(ROOT, "outpost"),
          "e2e",
          "run",
          "--suite",
          suite,
          "--env",
          "local",
          "--trigger",
          "ci",
          "--json",
          "--api-url",
          app.url,
          "--log-dir",
          logDir,
        ],
        {
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
      if (code !== 0) console.error(stderr, JSON.stringify(summary, null, 2));
      expect(summary.status).toBe("passed");
      if (suite === "runtime") {
        expect(
          summary.journeys.map((j: { journey_id: string; status: string }) => `${j.journey_id}:${j.status}`),
        ).toEqual(["runtime_transport_contract:passed", "runtime_transport_negative:passed"]);
      }
      expect(code).toBe(0);
    }
    // runtime_cleanup removed the runtime devices; only the smoke suite's registered (pending) device stays.
    const left = await app.database.sql`select product_name, approval_status from devices`;
    expect(left.map((d) => [d.product_name, d.approval_status])).toEqual([["E2E Device", "pending"]]);
    rmSync(logDir, { recursive: true, force: true });
  }, 60_000);
});
