import type { JourneyOutcome } from "./executor";
import { type JUnitJourney, type JUnitRun, writeJUnit } from "./junit";
import type { E2EApi } from "./run";

/** The JUnit report of `outpost e2e run --junit`, whatever way the run ended. */

// biome-ignore lint/suspicious/noExplicitAny: an E2ERun / E2ERunResult as the API returned it
type ApiRecord = any;

function runFields(run: ApiRecord, status: string, consoleUrl: string): Omit<JUnitRun, "journeys"> {
  return {
    run_id: run.id,
    suite_id: run.suite_id,
    environment_label: run.environment_label,
    status,
    started_at: run.started_at ?? null,
    console_url: consoleUrl,
  };
}

/** The run ended (or was interrupted): the server's results, each with its log. */
export async function reportRun(
  file: string,
  api: E2EApi,
  run: ApiRecord,
  status: string,
  consoleUrl: string,
  results: ApiRecord[],
  executed: Map<string, JourneyOutcome>,
): Promise<void> {
  const journeys: JUnitJourney[] = [];
  for (const r of results)
    journeys.push({
      journey_id: r.journey_id,
      status: r.status,
      failure_step: r.failure_step,
      failure_reason: r.failure_reason,
      duration_ms: r.duration_ms,
      log: await journeyLog(api, run.id, r, executed),
    });
  writeJUnit(file, { ...runFields(run, status, consoleUrl), journeys });
}

/** This runner's own log, else the one an earlier attempt stored on the server. */
async function journeyLog(
  api: E2EApi,
  runId: string,
  result: ApiRecord,
  executed: Map<string, JourneyOutcome>,
): Promise<string | null> {
  const own = executed.get(result.journey_id)?.log;
  if (own !== undefined) return own;
  if (!result.log_ref) return null;
  const reply = await api
    .call("GET", `/e2e/runs/${runId}/results/${result.journey_id}/log`, undefined, "application/json", 30_000)
    .catch(() => undefined);
  if (reply?.status === 200) return reply.body.data.content;
  const why = reply?.body?.error ? `${reply.status} ${reply.body.error.code}` : (reply?.status ?? "no reply");
  return `(log unavailable: ${why})`;
}

/** The server stopped answering mid-run: what this runner saw, and the error. */
export function reportBrokenRun(
  file: string,
  run: ApiRecord,
  status: string | undefined,
  consoleUrl: string,
  error: string,
  executed: Map<string, JourneyOutcome>,
): void {
  const notRun = status === "cancelled" ? "cancelled" : "skipped";
  writeJUnit(file, {
    ...runFields(run, status ?? "unknown", consoleUrl),
    error,
    journeys: (run.journey_ids as string[]).map((journeyId) => {
      const done = executed.get(journeyId);
      return done
        ? {
            journey_id: journeyId,
            status: done.status,
            failure_step: done.failureStep,
            failure_reason: done.failureReason,
            duration_ms: done.durationMs,
            log: done.log,
          }
        : {
            journey_id: journeyId,
            status: notRun,
            failure_step: null,
            failure_reason: "not run by this runner",
            duration_ms: null,
            log: null,
          };
    }),
  });
}

/** No run: one <error> test case with the reason, so the CI's report step still finds a file. */
export function reportNotCreated(file: string, suite: string, environment: string, problem: string): void {
  writeJUnit(file, {
    run_id: "",
    suite_id: suite,
    environment_label: environment,
    status: "not_created",
    started_at: null,
    console_url: "",
    journeys: [],
    error: problem,
  });
}
