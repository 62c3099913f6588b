import { Elysia } from "elysia";
import { consolePages } from "../../ui/page";
import { noteAudit } from "../audit/service";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { requestLogger } from "../platform/http";
import { BodyError, jsonBody, readJsonBody } from "../platform/json-body";
import { type E2EConfig, e2eConfigFor } from "./config";
import { createRun } from "./create";
import { runsCsv } from "./csv";
import { readLog, storeLog } from "./logs";
import { parseResultsBody, parseRunFilters } from "./model";
import { E2EDisabledPage, E2EPage } from "./pages/page";
import { E2EDetail } from "./pages/run-detail";
import { E2ERunsTable } from "./pages/runs-table";
import { parsePageQuery, runsPageData } from "./queries";
import { cancelRun, submitResults } from "./results";
import { deleteRuns } from "./retention";
import { authenticateRunner, PROTOCOL_HEADER, RUNNER_HEADER } from "./runner-auth";
import { getRun, listResults, listRuns, listSuites } from "./runs";

/**
 * Create bodies hold at most 500 journey ids and 16 KiB of metadata; results bodies 1000 results whose
 * texts are clipped to 2000 characters only after parsing, hence the room.
 */
const BODY_MAX_BYTES = 8 * 1024 * 1024;
const parseJson = ({ request }: { request: Request }) => readJsonBody(request, BODY_MAX_BYTES);

/** The parsed body; unparsable JSON is the spec's invalid_request here, like any other bad body. */
function e2eJsonBody(body: unknown): unknown {
  if (body instanceof BodyError && body.error.code === "invalid_json")
    throw new AppError(400, "invalid_request", "The request body is not valid JSON.", { field: null });
  return jsonBody(body);
}

/** The E2E API (/e2e/…, runner credentials) and the operators' runs page (/e2e). */
export function e2eRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const { config, database, logger, access } = ctx;
  const e2e = config.e2eEnabled ? e2eConfigFor(config) : undefined;

  /** Enablement first (404 when off, whatever the credentials), then the runner credentials. */
  function runner(request: Request): { e2e: E2EConfig; runnerId: string } {
    if (!e2e) throw new AppError(404, "not_found", "There is nothing at this address.");
    const runnerId = authenticateRunner(
      e2e,
      request.headers.get(RUNNER_HEADER),
      request.headers.get("authorization"),
    );
    return { e2e, runnerId };
  }

  const api = new Elysia({ name: "e2e-api" })
    .use(access)
    .get(
      "/e2e/suites",
      ({ request }) => {
        const { e2e } = runner(request);
        return { data: listSuites(e2e) };
      },
      { access: "e2e" },
    )
    .get(
      "/e2e/runs",
      async ({ request }) => {
        // The query is checked here, after enablement and credentials (a route schema would be
        // checked first and answer 400 to a caller who should get 404 or 401).
        runner(request);
        return { data: await listRuns(database, parseRunFilters(new URL(request.url).searchParams)) };
      },
      { access: "e2e" },
    )
    .post(
      "/e2e/runs",
      async ({ request, body, set }) => {
        const { e2e, runnerId } = runner(request);
        const outcome = await createRun(database, e2e, requestLogger(logger, request), {
          body: e2eJsonBody(body),
          protocolHeader: request.headers.get(PROTOCOL_HEADER),
          runnerId,
        });
        noteAudit(request, {
          target: `e2e_run:${outcome.run.id}`,
          details: outcome.replayed ? { replayed: true } : {},
        });
        if (outcome.replayed) {
          set.status = 200;
          set.headers["idempotent-replayed"] = "true";
        } else {
          set.status = 201;
        }
        return { data: outcome.run };
      },
      { access: "e2e", parse: parseJson },
    )
    .get(
      "/e2e/runs/:runId",
      async ({ request, params }) => {
        runner(request);
        return { data: await getRun(database, params.runId) };
      },
      { access: "e2e" },
    )
    .post(
      "/e2e/runs/:runId/cancel",
      async ({ request, params, set }) => {
        runner(request);
        set.status = 202;
        const run = await cancelRun(database, requestLogger(logger, request), params.runId);
        noteAudit(request, { details: { status: run.status } });
        return { data: run };
      },
      { access: "e2e", parse: "none" },
    )
    .get(
      "/e2e/runs/:runId/results",
      async ({ request, params }) => {
        runner(request);
        return { data: await listResults(database, params.runId) };
      },
      { access: "e2e" },
    )
    .post(
      "/e2e/runs/:runId/results",
      async ({ request, params, body, set }) => {
        runner(request);
        const results = parseResultsBody(e2eJsonBody(body));
        const data = await submitResults(database, requestLogger(logger, request), params.runId, results);
        // Which journeys moved to which status (the first 20 of a batch).
        noteAudit(request, {
          details: {
            results: results.slice(0, 20).map((result) => `${result.journey_id}: ${result.status}`),
            count: results.length,
          },
        });
        set.status = 202;
        return { data };
      },
      { access: "e2e", parse: parseJson },
    )
    .get(
      "/e2e/runs/:runId/results/:journeyId/log",
      async ({ request, params }) => {
        runner(request);
        return { data: await readLog(database, params.runId, params.journeyId) };
      },
      { access: "e2e" },
    )
    .put(
      "/e2e/runs/:runId/results/:journeyId/log",
      async ({ request, params }) => {
        const { e2e } = runner(request);
        const limit = e2e.maxLogUploadBytes;
        const tooLarge = () =>
          new AppError(413, "payload_too_large", `A journey log may be at most ${limit} bytes.`, {
            max_bytes: limit,
          });
        const declared = Number(request.headers.get("content-length") ?? "0");
        if (declared > limit) throw tooLarge();
        const bytes = new Uint8Array(await request.arrayBuffer());
        if (bytes.byteLength > limit) throw tooLarge();
        let content: string;
        try {
          content = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
        } catch {
          throw new AppError(400, "invalid_request", "A journey log must be UTF-8 text (e2e_log.v1 JSONL).");
        }
        if (content.includes("\u0000"))
          throw new AppError(400, "invalid_request", "A journey log must not contain NUL bytes.");
        const stored = await storeLog(database, params.runId, params.journeyId, content);
        noteAudit(request, { details: { journey_id: params.journeyId, bytes: bytes.byteLength } });
        return { data: stored };
      },
      { access: "e2e", parse: "none" },
    );

  const ui = new Elysia({ name: "e2e-ui" })
    .use(access)
    .get(
      "/e2e",
      async ({ request, principal }) => {
        const page = pageContext(request, principal);
        // The menu links here on every server: when E2E is off, the page says how to turn it on (200).
        if (!e2e) return htmlPage(page, <E2EDisabledPage ctx={page} />);
        const query = parsePageQuery(new URL(request.url).searchParams);
        const data = await runsPageData(database, e2e, query, principal?.role === "admin");
        if (query.fragment === "runs")
          return htmlPage({ flash: undefined }, <E2ERunsTable data={data} csrfToken={page.csrfToken} />);
        if (query.fragment === "detail") return htmlPage({ flash: undefined }, <E2EDetail data={data} />);
        return htmlPage(page, <E2EPage ctx={page} data={data} />);
      },
      { access: "viewer" },
    )
    .get(
      "/e2e.csv",
      ({ request }) => {
        if (!e2e) throw new AppError(404, "not_found", "E2E runs are not enabled on this server.");
        return runsCsv(database, parsePageQuery(new URL(request.url).searchParams));
      },
      { access: "viewer" },
    )
    .post(
      "/e2e",
      async ({ body, request }) => {
        if (!e2e) throw new AppError(404, "not_found", "E2E runs are not enabled on this server.");
        // Checked here, after enablement (a body schema would answer 400 before the 404).
        const form = (body ?? {}) as Record<string, unknown>;
        const raw = form.ids === undefined ? [] : Array.isArray(form.ids) ? form.ids : [form.ids];
        if (form.action !== "delete" || raw.some((id) => typeof id !== "string") || raw.length > 500)
          throw new AppError(400, "invalid_request", "This form asks to delete up to 500 runs by id.");
        const ids = raw as string[];
        if (ids.length === 0)
          return redirectWithFlash("/e2e", { kind: "error", text: "Select at least one run to delete." });
        const deleted = await deleteRuns(database, requestLogger(logger, request), ids);
        noteAudit(request, { details: { deleted } });
        const back = new URL(request.url).searchParams.toString();
        return redirectWithFlash(`/e2e${back ? `?${back}` : ""}`, {
          kind: "success",
          text: `Deleted ${deleted} run${deleted === 1 ? "" : "s"} and their journey logs.`,
        });
      },
      { access: "admin" },
    );
  return new Elysia({ name: "e2e" }).use(api).use(ui);
}
