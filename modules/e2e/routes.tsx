import { Elysia } from "elysia";
import { consolePages } from "../../ui/page";
import { noteAudit } from "../audit/service";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { requestLogger } from "../platform/http";
import { BodyError, readJsonBody } from "../platform/json-body";
import { ButtonForm, errorReplies, formList } from "../platform/schemas";
import { type E2EConfig, e2eConfigFor } from "./config";
import { createPreconditions, createRun } from "./create";
import { runsCsv } from "./csv";
import { readLog, storeLog } from "./logs";
import {
  CreateRunBodySchema,
  CreateRunHeaders,
  DeleteRunsForm,
  distinctResults,
  E2EPageQuery,
  JourneyParams,
  LogReply,
  LogStoredReply,
  LogUploadBody,
  ResultListReply,
  ResultsBodySchema,
  RunFiltersQuery,
  RunListReply,
  RunParams,
  RunReply,
  runFilters,
  SuiteListReply,
} from "./model";
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

/** The body read as JSON; unparsable JSON is the spec's invalid_request here, like any other bad body. */
async function parseJson({ request }: { request: Request }): Promise<unknown> {
  const body = await readJsonBody(request, BODY_MAX_BYTES);
  if (body instanceof BodyError && body.error.code === "invalid_json")
    return new BodyError(
      new AppError(400, "invalid_request", "The request body is not valid JSON.", { field: null }),
    );
  return body;
}

/** A journey log as UTF-8 text without NUL, at most `limit` bytes (a BodyError otherwise). */
async function readLogUpload(request: Request, limit: number): Promise<string | BodyError> {
  const tooLarge = () =>
    new BodyError(
      new AppError(413, "payload_too_large", `A journey log may be at most ${limit} bytes.`, {
        max_bytes: limit,
      }),
    );
  if (Number(request.headers.get("content-length") ?? "0") > limit) return tooLarge();
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.byteLength > limit) return tooLarge();
  let content: string;
  try {
    content = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return new BodyError(
      new AppError(400, "invalid_request", "A journey log must be UTF-8 text (e2e_log.v1 JSONL)."),
    );
  }
  if (content.includes("\u0000"))
    return new BodyError(new AppError(400, "invalid_request", "A journey log must not contain NUL bytes."));
  return content;
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
    // At the transform stage, before the route schemas: a caller who should get 404 or 401 never
    // learns the input rules.
    .derive(({ request }) => runner(request))
    .get("/e2e/suites", ({ e2e }) => ({ data: listSuites(e2e) }), {
      access: "e2e",
      detail: { summary: "List the configured suites and their journeys" },
      response: { 200: SuiteListReply, ...errorReplies(401, 404) },
    })
    .get("/e2e/runs", async ({ query }) => ({ data: await listRuns(database, runFilters(query)) }), {
      access: "e2e",
      detail: { summary: "List runs, newest first" },
      query: RunFiltersQuery,
      response: { 200: RunListReply, ...errorReplies(400, 401, 404) },
    })
    .post(
      "/e2e/runs",
      async ({ body, runnerId, e2e, headers, set, request }) => {
        const outcome = await createRun(database, e2e, requestLogger(logger, request), {
          body,
          // Checked by createPreconditions (the transform below).
          protocolVersion: headers[PROTOCOL_HEADER].trim(),
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
      {
        access: "e2e",
        detail: { summary: "Create a run (seeds the environment, holds its lock)" },
        parse: parseJson,
        // The spec's order of concern: legacy fields, the environment, the protocol, then the shape.
        transform: ({ body, e2e, request }) => {
          createPreconditions(e2e, body, request.headers.get(PROTOCOL_HEADER));
        },
        headers: CreateRunHeaders,
        body: CreateRunBodySchema,
        response: {
          200: RunReply,
          201: RunReply,
          ...errorReplies(400, 401, 404, 409, 413, 422),
        },
      },
    )
    .get("/e2e/runs/:runId", async ({ params }) => ({ data: await getRun(database, params.runId) }), {
      access: "e2e",
      detail: { summary: "Get a run" },
      params: RunParams,
      response: { 200: RunReply, ...errorReplies(401, 404) },
    })
    .post(
      "/e2e/runs/:runId/cancel",
      async ({ params, set, request }) => {
        set.status = 202;
        const run = await cancelRun(database, requestLogger(logger, request), params.runId);
        noteAudit(request, { details: { status: run.status } });
        return { data: run };
      },
      {
        access: "e2e",
        detail: { summary: "Cancel a run" },
        parse: "none",
        params: RunParams,
        response: { 202: RunReply, ...errorReplies(401, 404, 422) },
      },
    )
    .get(
      "/e2e/runs/:runId/results",
      async ({ params }) => ({ data: await listResults(database, params.runId) }),
      {
        access: "e2e",
        detail: { summary: "List a run's journey results" },
        params: RunParams,
        response: { 200: ResultListReply, ...errorReplies(401, 404) },
      },
    )
    .post(
      "/e2e/runs/:runId/results",
      async ({ request, params, body, set }) => {
        const results = distinctResults(body.results);
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
      {
        access: "e2e",
        detail: { summary: "Submit journey results (`{results: [...]}`)" },
        parse: parseJson,
        params: RunParams,
        body: ResultsBodySchema,
        response: { 202: ResultListReply, ...errorReplies(400, 401, 404, 413, 422) },
      },
    )
    .get(
      "/e2e/runs/:runId/results/:journeyId/log",
      async ({ params }) => ({ data: await readLog(database, params.runId, params.journeyId) }),
      {
        access: "e2e",
        detail: { summary: "Get a journey's log" },
        params: JourneyParams,
        response: { 200: LogReply, ...errorReplies(401, 404, 410) },
      },
    )
    .put(
      "/e2e/runs/:runId/results/:journeyId/log",
      async ({ params, body, request }) => {
        const stored = await storeLog(database, params.runId, params.journeyId, body);
        noteAudit(request, { details: { journey_id: params.journeyId, bytes: Buffer.byteLength(body) } });
        return { data: stored };
      },
      {
        access: "e2e",
        detail: { summary: "Upload a journey's log (e2e_log.v1 JSON Lines)" },
        parse: ({ request }) => (e2e ? readLogUpload(request, e2e.maxLogUploadBytes) : undefined),
        params: JourneyParams,
        body: LogUploadBody,
        response: { 200: LogStoredReply, ...errorReplies(400, 401, 404, 413) },
      },
    );

  const ui = new Elysia({ name: "e2e-ui" })
    .use(access)
    .get(
      "/e2e",
      async ({ request, principal, query: raw }) => {
        const page = pageContext(request, principal);
        // The menu links here on every server: when E2E is off, the page says how to turn it on (200).
        if (!e2e) return htmlPage(page, <E2EDisabledPage ctx={page} />);
        const query = parsePageQuery(raw);
        const data = await runsPageData(database, e2e, query, principal?.role === "admin");
        if (query.fragment === "runs")
          return htmlPage({ flash: undefined }, <E2ERunsTable data={data} csrfToken={page.csrfToken} />);
        if (query.fragment === "detail") return htmlPage({ flash: undefined }, <E2EDetail data={data} />);
        return htmlPage(page, <E2EPage ctx={page} data={data} />);
      },
      { access: "viewer", query: e2e ? E2EPageQuery : undefined },
    )
    .get(
      "/e2e.csv",
      ({ query }) => {
        if (!e2e) throw new AppError(404, "not_found", "E2E runs are not enabled on this server.");
        return runsCsv(database, parsePageQuery(query));
      },
      // E2E off, any address reaches the page that says so (or the 404), never a refusal of its query.
      { access: "viewer", query: e2e ? E2EPageQuery : undefined },
    )
    .post(
      "/e2e",
      async ({ body, request }) => {
        if (!e2e) throw new AppError(404, "not_found", "E2E runs are not enabled on this server.");
        const ids = body && "ids" in body ? formList(body.ids) : [];
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
      // E2E off, any form reaches the handler's 404 (the access check first, then enablement).
      { access: "admin", body: e2e ? DeleteRunsForm : ButtonForm },
    );
  return new Elysia({ name: "e2e" }).use(api).use(ui);
}
