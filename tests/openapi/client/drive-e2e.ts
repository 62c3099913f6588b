// The E2E API as a CI runner calls it, each operation for its success and its main error (see drive.ts).
import type { Client } from "openapi-fetch";
import type { paths } from "./api-types";

export async function driveE2e(anonymous: Client<paths>, runner: Client<paths>, mac: string): Promise<void> {
  await anonymous.GET("/e2e/suites", {});
  await runner.GET("/e2e/suites", {});
  await runner.GET("/e2e/runs", { params: { query: { limit: "0" } } });
  await runner.GET("/e2e/runs", { params: { query: { suite_id: "smoke", limit: "5" } } });
  const create = { suite_id: "smoke", environment_label: "plain", trigger_source: "ci" as const };
  await runner.POST("/e2e/runs", { params: { header: { "x-e2e-protocol-version": "9" } }, body: create });
  const run = await runner.POST("/e2e/runs", {
    params: { header: { "x-e2e-protocol-version": "1" } },
    body: { ...create, idempotency_key: `contract-${mac}`, metadata: { build: 1 } },
  });
  const runId = run.data?.data.id ?? "";
  const unknownRun = { path: { runId: crypto.randomUUID() } };
  const thisRun = { path: { runId } };
  await runner.GET("/e2e/runs/{runId}", { params: unknownRun });
  await runner.GET("/e2e/runs/{runId}", { params: thisRun });
  await runner.GET("/e2e/runs/{runId}/results", { params: unknownRun });
  await runner.GET("/e2e/runs/{runId}/results", { params: thisRun });
  const log = '{"v":1,"kind":"journey","journey_id":"dashboard","status":"passed"}\n';
  const asText = {
    bodySerializer: (body: string) => body,
    headers: { "content-type": "application/x-ndjson" },
  };
  const journey = { path: { runId, journeyId: "dashboard" } };
  await runner.PUT("/e2e/runs/{runId}/results/{journeyId}/log", {
    params: { path: { runId: unknownRun.path.runId, journeyId: "dashboard" } },
    body: log,
    ...asText,
  });
  await runner.PUT("/e2e/runs/{runId}/results/{journeyId}/log", { params: journey, body: log, ...asText });
  await runner.GET("/e2e/runs/{runId}/results/{journeyId}/log", {
    params: { path: { runId, journeyId: "no-such-journey" } },
  });
  await runner.GET("/e2e/runs/{runId}/results/{journeyId}/log", { params: journey });
  await runner.POST("/e2e/runs/{runId}/results", {
    params: unknownRun,
    body: { results: [{ journey_id: "dashboard", status: "passed" }] },
  });
  await runner.POST("/e2e/runs/{runId}/results", {
    params: thisRun,
    body: { results: [{ journey_id: "dashboard", status: "passed", duration_ms: 1200 }] },
  });
  await runner.POST("/e2e/runs/{runId}/cancel", { params: unknownRun });
  await runner.POST("/e2e/runs/{runId}/cancel", { params: thisRun });
}
