// The suite reports to the E2E run API of the Outpost it starts, as a CI system would (docs/e2e.md):
// one run of the `system` suite, each journey `running`, then its e2e_log.v1 log and its final status
// with the failing step. The E2E page of that Outpost then shows Outpost testing itself.
import { RUNNER } from "./fleet";

const PROTOCOL = "1";

interface StepRow {
  step_id: string;
  status: "passed" | "failed";
  duration_ms: number;
  error_message?: string;
}

export interface JourneyRecord {
  id: string;
  status: "passed" | "failed";
  durationMs: number;
  failureStep?: string;
}

/**
 * One API call. A gateway error (502–504: the proxy lost the web process that was answering) is tried
 * again, as a CI reporter would, for up to 15 s; every call here is safe to repeat but the run's
 * creation, which is not retried.
 */
async function call(apiUrl: string, method: string, pathname: string, body?: unknown, raw?: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const response = await fetch(`${apiUrl}${pathname}`, {
      method,
      headers: {
        authorization: `Bearer ${RUNNER.token}`,
        "x-e2e-runner-id": RUNNER.id,
        "x-e2e-protocol-version": PROTOCOL,
        "content-type": raw === undefined ? "application/json" : "application/x-ndjson",
      },
      body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    const retry = response.status >= 502 && response.status <= 504 && pathname !== "/e2e/runs";
    if (retry && Date.now() < deadline) {
      await Bun.sleep(500);
      continue;
    }
    if (response.status >= 300) throw new Error(`${method} ${pathname} answered ${response.status}: ${text}`);
    return JSON.parse(text) as { data: Record<string, unknown> };
  }
}

/** Creates the run; `step` inside `journey` marks each step so a failure names it. */
export async function startSystemRun(apiUrl: string) {
  const created = await call(apiUrl, "POST", "/e2e/runs", {
    suite_id: "system",
    environment_label: "ci",
    trigger_source: "ci",
    metadata: { harness: "tests/system (npm run test:system)" },
  });
  const runId = String(created.data.id);
  const records: JourneyRecord[] = [];

  type Step = <T>(stepId: string, fn: () => Promise<T>) => Promise<T>;

  /**
   * Starts a journey: `step(id, fn)` runs and records one step; `end()` reports the journey (passed, or
   * failed at the first step that threw). A journey may span tests (the offline one waits while
   * others run); `journey()` is begin, work, end in one.
   */
  async function begin(id: string) {
    const started = Date.now();
    const steps: StepRow[] = [];
    let failure: { step: string; reason: string } | undefined;
    await call(apiUrl, "POST", `/e2e/runs/${runId}/results`, {
      results: [{ journey_id: id, status: "running" }],
    });
    const step: Step = async (stepId, fn) => {
      if (failure) throw new Error(`${id} already failed at ${failure.step}`);
      const at = Date.now();
      try {
        const value = await fn();
        steps.push({ step_id: stepId, status: "passed", duration_ms: Date.now() - at });
        return value;
      } catch (error) {
        const reason = String((error as Error)?.message ?? error).slice(0, 2000);
        steps.push({
          step_id: stepId,
          status: "failed",
          duration_ms: Date.now() - at,
          error_message: reason,
        });
        failure = { step: stepId, reason };
        throw error;
      }
    };
    /** `error`: what ended the journey outside any step (then it failed at `harness`). */
    async function end(error?: unknown) {
      if (error !== undefined && !failure)
        failure = { step: "harness", reason: String((error as Error)?.message ?? error).slice(0, 2000) };
      const durationMs = Date.now() - started;
      const status = failure ? "failed" : "passed";
      records.push({ id, status, durationMs, failureStep: failure?.step });
      const row = (fields: Record<string, unknown>) =>
        JSON.stringify({
          schema: "e2e_log.v1",
          timestamp: new Date().toISOString(),
          journey_id: id,
          ...fields,
        });
      const log = [
        row({
          level: "journey",
          event: "started",
          status: "running",
          run: { run_id: runId, suite_id: "system" },
        }),
        ...steps.map((s) => row({ level: "step", action: "harness_step", expect: "harness_reported", ...s })),
        row({
          level: "journey",
          event: "completed",
          status,
          duration_ms: durationMs,
          steps_run: steps.length,
          steps_passed: steps.filter((s) => s.status === "passed").length,
          steps_failed: steps.filter((s) => s.status === "failed").length,
          failure_step: failure?.step,
        }),
      ].join("\n");
      await call(apiUrl, "PUT", `/e2e/runs/${runId}/results/${id}/log`, undefined, `${log}\n`);
      await call(apiUrl, "POST", `/e2e/runs/${runId}/results`, {
        results: [
          {
            journey_id: id,
            status,
            duration_ms: durationMs,
            failure_step: failure?.step ?? null,
            failure_reason: failure?.reason ?? null,
          },
        ],
      });
    }
    return { step, end };
  }

  async function journey(id: string, work: (step: Step) => Promise<void>) {
    const { step, end } = await begin(id);
    try {
      await work(step);
    } catch (error) {
      // The journey's own error is the one to see; a failed report of it is only printed.
      await end(error).catch((report) => console.error(`reporting ${id}: ${report}`));
      throw error;
    }
    await end();
  }

  return {
    runId,
    records,
    begin,
    journey,
    /** Reports every journey of the suite that never started as `skipped` (a filtered run). */
    async finish() {
      const reported = new Set(records.map((r) => r.id));
      const skipped = (created.data.journey_ids as string[]).filter((id) => !reported.has(id));
      if (skipped.length > 0)
        await call(apiUrl, "POST", `/e2e/runs/${runId}/results`, {
          results: skipped.map((journey_id) => ({ journey_id, status: "skipped" })),
        });
    },
    async status() {
      return String((await call(apiUrl, "GET", `/e2e/runs/${runId}`)).data.status);
    },
  };
}
