import { JourneyError, loadJourney } from "../journeys";
import { redact } from "../redaction";
import { type ActionContext, type JourneyState, RUNNER_ACTIONS } from "./actions";
import { ActionError, ActionHttp } from "./http";

export const LOG_SCHEMA = "e2e_log.v1";

export interface RunInfo {
  run_id: string;
  suite_id: string;
  environment_label: string;
  trigger_source: string;
  protocol_version: string;
}

export interface JourneyOutcome {
  journeyId: string;
  status: "passed" | "failed";
  failureStep: string | null;
  failureReason: string | null;
  failureCode: string | null;
  durationMs: number;
  /** e2e_log.v1 JSONL, secrets redacted. */
  log: string;
}

export interface ExecuteOptions {
  apiUrl: string;
  journeysDir: string;
  operatorToken: string | undefined;
  signal: AbortSignal;
}

function row(fields: Record<string, unknown>): string {
  const clean = Object.fromEntries(
    Object.entries(fields).filter(([, v]) => v !== undefined && v !== null && v !== ""),
  );
  return JSON.stringify({ schema: LOG_SCHEMA, timestamp: new Date().toISOString(), ...clean });
}

/** Runs one journey's steps in order; the first failing step ends it. Never throws. */
export async function executeJourney(
  journeyId: string,
  run: RunInfo,
  options: ExecuteOptions,
): Promise<JourneyOutcome> {
  const started = Date.now();
  const lines = [row({ level: "journey", event: "started", status: "running", journey_id: journeyId, run })];
  let failure: { step: string; reason: string; code: string } | undefined;
  let passed = 0;
  let runCount = 0;
  const state: JourneyState = { claimedCommandIds: [] };
  try {
    const spec = loadJourney(options.journeysDir, journeyId);
    for (const step of spec.steps) {
      if (options.signal.aborted) {
        failure = { step: step.stepId, reason: "interrupted (run cancelled)", code: "TIMEOUT" };
        break;
      }
      runCount += 1;
      const stepStarted = Date.now();
      const http = new ActionHttp(options.apiUrl, options.signal);
      const ctx: ActionContext = { http, operatorToken: options.operatorToken, state, data: {} };
      let error: ActionError | undefined;
      try {
        const action = RUNNER_ACTIONS[step.action];
        if (!action) throw new ActionError("EXPECTATION_INVALID", `unknown action: ${step.action}`);
        if (action.expect !== step.expect)
          throw new ActionError("EXPECTATION_INVALID", `unsupported expectation: ${step.expect}`);
        await action.run(ctx);
      } catch (caught) {
        error =
          caught instanceof ActionError
            ? caught
            : new ActionError(
                "HTTP_REQUEST_FAILED",
                caught instanceof Error ? caught.message : String(caught),
              );
      }
      const last = http.traces.at(-1);
      lines.push(
        row({
          level: "step",
          status: error ? "failed" : "passed",
          journey_id: journeyId,
          step_id: step.stepId === step.action ? undefined : step.stepId,
          action: step.action,
          expect: step.expect,
          duration_ms: Date.now() - stepStarted,
          http_status: last?.http_status,
          response_type: last?.response_type,
          bytes: last?.bytes,
          truncated: last?.truncated,
          action_data: redact({
            ...ctx.data,
            requests: http.traces.map((t) => `${t.method} ${t.path} → ${t.http_status ?? "no response"}`),
            body_preview: last?.body_preview,
            body_json: last?.body_json,
          }),
          error_code: error?.code,
          assertion_failed: error?.code === "ASSERTION_FAILED" ? true : undefined,
          error_message: error ? (redact(error.message) as string) : undefined,
          expected: redact(error?.expected),
          actual: redact(error?.actual),
        }),
      );
      if (error) {
        failure = { step: step.stepId, reason: redact(error.message) as string, code: error.code };
        break;
      }
      passed += 1;
    }
  } catch (error) {
    const reason =
      error instanceof JourneyError
        ? error.message
        : `could not load the journey: ${(error as Error).message}`;
    failure = { step: "load_journey", reason, code: "EXPECTATION_INVALID" };
  }
  const durationMs = Date.now() - started;
  const status = failure ? "failed" : "passed";
  lines.push(
    row({
      level: "journey",
      event: "completed",
      status,
      journey_id: journeyId,
      duration_ms: durationMs,
      steps_run: runCount,
      steps_passed: passed,
      steps_failed: runCount - passed,
      failure_step: failure?.step,
      failure_code: failure?.code,
    }),
  );
  return {
    journeyId,
    status,
    failureStep: failure?.step ?? null,
    failureReason: failure?.reason ?? null,
    failureCode: failure?.code ?? null,
    durationMs,
    log: `${lines.join("\n")}\n`,
  };
}
