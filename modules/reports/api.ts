import { Elysia } from "elysia";
import { noteAudit, noteChanges } from "../audit/service";
import type { AppContext } from "../platform/context";
import { jsonBody, readJsonBody } from "../platform/json-body";
import {
  createReport,
  deleteReport,
  invalidReport,
  isInvalid,
  listReports,
  requireReport,
  updateReport,
} from "./definitions";
import { reportCsv } from "./export";
import { auditedReport, reportJson } from "./model";
import { reportResults, viewFromParams } from "./results";

const BODY_MAX = 256 * 1024;
const JSONAPI = "application/vnd.api+json";

/**
 * The reports API: `/api/v1/reports` (definitions, results, CSV) and the reference's JSON:API
 * resource `/api/json/custom_reports` (type `custom_report`). Viewers read; operators write.
 */
export function reportApiRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  const parse = ({ request }: { request: Request }) => readJsonBody(request, BODY_MAX);

  async function results(request: Request, id: string) {
    const report = await requireReport(sql, id);
    const params = new URL(request.url).searchParams;
    const view = viewFromParams(params);
    if (params.get("format") === "csv") return reportCsv(sql, report, view);
    const page = await reportResults(sql, report, view, { strict: true });
    return {
      data: { fields: page.fields, rows: page.rows },
      meta: {
        report_id: report.id,
        mode: page.view.mode,
        bucket: page.view.mode === "buckets" ? page.view.bucket : null,
        range: page.view.range,
        filters: report.config.filters,
        view_filter: page.view.filter,
        sort: page.view.sort ?? { by: null, direction: page.view.mode === "raw" ? "desc" : "asc" },
        columns: page.columns,
        row_count: page.rows.length,
        limit: page.view.limit,
        next_cursor: page.nextCursor ?? null,
      },
    };
  }

  const resource = (report: Parameters<typeof reportJson>[0]) => {
    const { id, ...attributes } = reportJson(report);
    return { type: "custom_report", id, attributes };
  };
  const doc = (body: unknown, status = 200) =>
    new Response(body === null ? null : JSON.stringify(body), {
      status,
      headers: { "content-type": JSONAPI },
    });
  const attributesOf = (body: unknown) => {
    const data = (body as { data?: { attributes?: unknown } } | undefined)?.data;
    return data?.attributes;
  };

  return new Elysia({ name: "report-api" })
    .use(ctx.access)
    .get(
      "/api/v1/reports",
      async ({ request }) => {
        const params = new URL(request.url).searchParams;
        const reports = await listReports(sql, {
          name: params.get("name") ?? undefined,
          fields: params.getAll("field"),
          dir: params.get("sort_dir") === "desc" ? "desc" : "asc",
        });
        return { data: reports.map(reportJson) };
      },
      { access: "viewer" },
    )
    .post(
      "/api/v1/reports",
      async ({ body, set, request }) => {
        const result = await createReport(sql, jsonBody(body));
        if (isInvalid(result)) throw invalidReport(result);
        noteAudit(request, { target: `report:${result.id}`, details: { name: result.name } });
        set.status = 201;
        return { data: reportJson(result) };
      },
      { access: "operator", parse },
    )
    .get(
      "/api/v1/reports/:id",
      async ({ params }) => ({ data: reportJson(await requireReport(sql, params.id)) }),
      {
        access: "viewer",
      },
    )
    .patch(
      "/api/v1/reports/:id",
      async ({ params, body, request }) => {
        const before = await requireReport(sql, params.id);
        const result = await updateReport(sql, before.id, jsonBody(body));
        if (result === undefined) await requireReport(sql, params.id);
        if (isInvalid(result)) throw invalidReport(result);
        noteChanges(request, auditedReport(before), auditedReport(result!));
        return { data: reportJson(result!) };
      },
      { access: "operator", parse },
    )
    .delete(
      "/api/v1/reports/:id",
      async ({ params, set, request }) => {
        const report = await requireReport(sql, params.id);
        await deleteReport(sql, params.id);
        noteAudit(request, { details: { name: report.name } });
        set.status = 204;
        return "";
      },
      { access: "operator" },
    )
    .get("/api/v1/reports/:id/results", ({ request, params }) => results(request, params.id), {
      access: "viewer",
    })
    .get("/api/json/custom_reports", async () => doc({ data: (await listReports(sql)).map(resource) }), {
      access: "viewer",
    })
    .get(
      "/api/json/custom_reports/:id",
      async ({ params }) => doc({ data: resource(await requireReport(sql, params.id)) }),
      {
        access: "viewer",
      },
    )
    .post(
      "/api/json/custom_reports",
      async ({ body, request }) => {
        const result = await createReport(sql, attributesOf(jsonBody(body)));
        if (isInvalid(result)) throw invalidReport(result);
        noteAudit(request, { target: `report:${result.id}`, details: { name: result.name } });
        return doc({ data: resource(result) }, 201);
      },
      { access: "operator", parse },
    )
    .patch(
      "/api/json/custom_reports/:id",
      async ({ params, body, request }) => {
        const current = await requireReport(sql, params.id);
        const attributes = (attributesOf(jsonBody(body)) ?? {}) as Record<string, unknown>;
        // JSON:API PATCH updates the attributes sent; the rest stay as they are.
        const result = await updateReport(sql, current.id, {
          name: current.name,
          config: current.config,
          ...attributes,
        });
        if (isInvalid(result)) throw invalidReport(result);
        noteChanges(request, auditedReport(current), auditedReport(result!));
        return doc({ data: resource(result!) });
      },
      { access: "operator", parse },
    )
    .delete(
      "/api/json/custom_reports/:id",
      async ({ params, request }) => {
        const report = await requireReport(sql, params.id);
        noteAudit(request, { details: { name: report.name } });
        await deleteReport(sql, params.id);
        return doc(null, 204);
      },
      { access: "operator" },
    );
}
