import { Elysia } from "elysia";
import { redirectWithFlash } from "../../ui/flash";
import { htmlPage, pageContext } from "../../ui/page";
import { E2EDetail, E2EDisabledPage, E2EPage, type E2EPageData, E2ERunsTable } from "../../ui/pages/e2e";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { type E2EConfig, e2eConfigFor } from "./config";
import { journeyDescription } from "./journeys";
import { RUN_STATUSES } from "./schema";
import {
  authenticateRunner,
  cancelRun,
  createRun,
  deleteRuns,
  findRun,
  getRun,
  listResultRows,
  listResults,
  listRuns,
  listRunsPage,
  listSuites,
  PAGE_SORTS,
  type PageSort,
  PROTOCOL_HEADER,
  parseJourneyLog,
  RUNNER_HEADER,
  type RunFilters,
  readLog,
  storeLog,
  submitResults,
} from "./service";

const PER_PAGE = 25;

async function jsonBody(request: Request): Promise<unknown> {
  const text = await request.text();
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError(400, "invalid_request", "The request body is not valid JSON.", { field: null });
  }
}

const FILTER_LIMITS = { status: 50, suite_id: 200, environment_label: 200, trigger_source: 50 } as const;

/** GET /e2e/runs query: optional string filters and `limit` (an integer 1–500, default 50). */
export function parseRunFilters(params: URLSearchParams): RunFilters {
  const filters: RunFilters = {};
  for (const [field, max] of Object.entries(FILTER_LIMITS) as [keyof typeof FILTER_LIMITS, number][]) {
    const values = params.getAll(field);
    if (values.length === 0) continue;
    if (values.length > 1 || values[0]!.length > max) {
      throw new AppError(400, "invalid_request", `${field} must be one value of at most ${max} characters.`, {
        field,
      });
    }
    filters[field] = values[0]!;
  }
  const limits = params.getAll("limit");
  if (limits.length > 0) {
    const limit = limits.length === 1 && /^\d{1,3}$/.test(limits[0]!.trim()) ? Number(limits[0]) : Number.NaN;
    if (!(limit >= 1 && limit <= 500))
      throw new AppError(400, "invalid_request", "limit must be an integer from 1 to 500.", {
        field: "limit",
      });
    filters.limit = limit;
  }
  return filters;
}

/** The E2E API (/e2e/…, runner credentials) and the operators' runs page (/e2e). */
export function e2eRoutes(ctx: AppContext) {
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
      async ({ request, set }) => {
        const { e2e, runnerId } = runner(request);
        const outcome = await createRun(database, e2e, logger, {
          body: await jsonBody(request),
          protocolHeader: request.headers.get(PROTOCOL_HEADER),
          runnerId,
        });
        if (outcome.replayed) {
          set.status = 200;
          set.headers["idempotent-replayed"] = "true";
        } else {
          set.status = 201;
        }
        return { data: outcome.run };
      },
      { access: "e2e", parse: "none" },
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
        return { data: await cancelRun(database, logger, params.runId) };
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
      async ({ request, params, set }) => {
        runner(request);
        const body = await jsonBody(request);
        const data = await submitResults(database, logger, params.runId, body);
        set.status = 202;
        return { data };
      },
      { access: "e2e", parse: "none" },
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
        return { data: await storeLog(database, params.runId, params.journeyId, content) };
      },
      { access: "e2e", parse: "none" },
    );

  /** The runs page query, read leniently in the handler (after enablement): bad values fall back to defaults. */
  function parsePageQuery(params: URLSearchParams) {
    const text = (name: string, max: number) => {
      const value = params.get(name);
      return value === null || value.length > max ? undefined : value;
    };
    const page = Number(text("page", 6) ?? "1");
    const fragment = text("fragment", 10);
    return {
      status: text("status", 50),
      suite: text("suite", 200),
      environment: text("environment", 200),
      trigger: text("trigger", 50),
      q: text("q", 200),
      sort: text("sort", 50),
      dir: text("dir", 4),
      page: Number.isInteger(page) && page >= 1 ? page : 1,
      run: text("run", 100),
      journey: text("journey", 200),
      fragment: fragment === "runs" || fragment === "detail" ? fragment : undefined,
    };
  }
  type PageQuery = ReturnType<typeof parsePageQuery>;

  async function pageData(query: PageQuery, principal: Principal | undefined): Promise<E2EPageData> {
    const e2eConfig = e2e!;
    const filters = {
      status: (RUN_STATUSES as readonly string[]).includes(query.status ?? "") ? query.status : undefined,
      suite: query.suite || undefined,
      environment: query.environment || undefined,
      trigger: query.trigger === "manual" || query.trigger === "ci" ? query.trigger : undefined,
      q: query.q?.trim() || undefined,
      sort: ((PAGE_SORTS as readonly string[]).includes(query.sort ?? "")
        ? query.sort
        : "started_at") as PageSort,
      dir: (query.dir === "asc" ? "asc" : "desc") as "asc" | "desc",
      page: query.page ?? 1,
      perPage: PER_PAGE,
    };
    const { rows, total } = await listRunsPage(database, filters);
    let detail: E2EPageData["detail"];
    if (query.run) {
      const run = await findRun(database, query.run);
      if (run) {
        const results = await listResultRows(database, run.id);
        let log: Extract<NonNullable<E2EPageData["detail"]>, { run: unknown }>["log"];
        const journey = query.journey && results.find((r) => r.journey_id === query.journey);
        if (journey) {
          try {
            const { content } = await readLog(database, run.id, journey.journey_id);
            log = {
              journeyId: journey.journey_id,
              lines: parseJourneyLog(content.slice(0, 200_000)),
              truncated: content.length > 200_000,
            };
          } catch (error) {
            if (!(error instanceof AppError)) throw error;
            log = { journeyId: journey.journey_id, lines: [], error: error.message };
          }
        }
        detail = {
          run,
          results: results.map((r) => ({
            ...r,
            description: journeyDescription(e2eConfig.journeysDir, r.journey_id),
          })),
          log,
        };
      } else {
        detail = { missing: query.run };
      }
    }
    return {
      filters,
      rows,
      total,
      suites: [...e2eConfig.suites.keys()].sort(),
      environments: [...e2eConfig.environments.keys()].sort(),
      canDelete: principal?.role === "admin",
      detail,
    };
  }

  const ui = new Elysia({ name: "e2e-ui" })
    .use(access)
    .get(
      "/e2e",
      async ({ request, principal }) => {
        const page = pageContext(request, principal, config.secretKey);
        if (!e2e) return htmlPage(page, <E2EDisabledPage ctx={page} />, 404);
        const query = parsePageQuery(new URL(request.url).searchParams);
        const data = await pageData(query, principal);
        if (query.fragment === "runs")
          return htmlPage({ flash: undefined }, <E2ERunsTable data={data} csrfToken={page.csrfToken} />);
        if (query.fragment === "detail") return htmlPage({ flash: undefined }, <E2EDetail data={data} />);
        return htmlPage(page, <E2EPage ctx={page} data={data} />);
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
        const deleted = await deleteRuns(database, logger, ids);
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
