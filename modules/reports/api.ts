import { Elysia } from "elysia";
import { noteAudit, noteChanges } from "../audit/service";
import type { AppContext } from "../platform/context";
import { readJsonBody } from "../platform/json-body";
import { errorReplies, jsonApiErrorReplies, NoContent } from "../platform/schemas";
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
import {
  auditedReport,
  CustomReportCreateDocument,
  CustomReportDocument,
  CustomReportListDocument,
  CustomReportUpdateDocument,
  ReportBody,
  ReportListQuery,
  ReportListReply,
  ReportParams,
  ReportReply,
  ReportResultsQuery,
  ReportResultsReply,
  reportJson,
} from "./model";
import { reportResults, viewFromQuery } from "./results";

const BODY_MAX = 256 * 1024;
const JSONAPI = "application/vnd.api+json";

/**
 * The reports API: `/api/v1/reports` (definitions, results, CSV) and the reference's JSON:API
 * resource `/api/json/custom_reports` (type `custom_report`). Viewers read; operators write.
 */
export function reportApiRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  const parse = ({ request }: { request: Request }) => readJsonBody(request, BODY_MAX);
  // A scope's `status:` terms read the online window of Settings.
  const scopeOptions = async () => ({
    onlineWindowSeconds: (await ctx.settings.device()).onlineWindowSeconds,
  });

  async function csvResults(id: string, query: ReportResultsQuery) {
    const report = await requireReport(sql, id);
    return reportCsv(sql, ctx.reportOptions, report, viewFromQuery(query), await scopeOptions());
  }

  async function results(id: string, query: ReportResultsQuery) {
    const report = await requireReport(sql, id);
    const view = viewFromQuery(query);
    const page = await reportResults(sql, ctx.reportOptions, report, view, {
      strict: true,
      ...(await scopeOptions()),
    });
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

  /** The page, or every row as CSV; two promises, not one of a union, for the route's reply types. */
  const resultsOf = (id: string, query: ReportResultsQuery) =>
    query.format === "csv" ? csvResults(id, query) : results(id, query);

  const resource = (report: Parameters<typeof reportJson>[0]) => {
    const { id, ...attributes } = reportJson(report);
    return { type: "custom_report", id, attributes };
  };
  const doc = (body: unknown, status = 200) =>
    new Response(body === null ? null : JSON.stringify(body), {
      status,
      headers: { "content-type": JSONAPI },
    });

  return new Elysia({ name: "report-api" })
    .use(ctx.access)
    .get(
      "/api/v1/reports",
      async ({ query }) => {
        const reports = await listReports(sql, {
          name: query.name,
          fields: query.field === undefined ? [] : [query.field].flat(),
          dir: query.sort_dir,
        });
        return { data: reports.map(reportJson) };
      },
      {
        access: "viewer",
        detail: { summary: "List report definitions by name" },
        query: ReportListQuery,
        response: { 200: ReportListReply, ...errorReplies(400, 401, 403) },
      },
    )
    .post(
      "/api/v1/reports",
      async ({ body, set, request }) => {
        const result = await createReport(sql, body);
        if (isInvalid(result)) throw invalidReport(result);
        noteAudit(request, { target: `report:${result.id}`, details: { name: result.name } });
        set.status = 201;
        return { data: reportJson(result) };
      },
      {
        access: "operator",
        detail: { summary: "Create a report definition" },
        parse,
        body: ReportBody,
        response: { 201: ReportReply, ...errorReplies(400, 401, 403, 413, 422) },
      },
    )
    .get(
      "/api/v1/reports/:id",
      async ({ params }) => ({ data: reportJson(await requireReport(sql, params.id)) }),
      {
        access: "viewer",
        detail: { summary: "One report definition" },
        params: ReportParams,
        response: { 200: ReportReply, ...errorReplies(401, 403, 404) },
      },
    )
    .patch(
      "/api/v1/reports/:id",
      async ({ params, body, request }) => {
        const before = await requireReport(sql, params.id);
        const result = await updateReport(sql, before.id, body);
        if (result === undefined) await requireReport(sql, params.id);
        if (isInvalid(result)) throw invalidReport(result);
        noteChanges(request, auditedReport(before), auditedReport(result!));
        return { data: reportJson(result!) };
      },
      {
        access: "operator",
        detail: { summary: "Replace a report definition (name and config)" },
        params: ReportParams,
        parse,
        body: ReportBody,
        response: { 200: ReportReply, ...errorReplies(400, 401, 403, 404, 413, 422) },
      },
    )
    .delete(
      "/api/v1/reports/:id",
      async ({ params, set, request }) => {
        const report = await requireReport(sql, params.id);
        await deleteReport(sql, params.id);
        noteAudit(request, { details: { name: report.name } });
        set.status = 204;
        return "" as const;
      },
      {
        access: "operator",
        detail: { summary: "Delete a report definition and its saved views" },
        params: ReportParams,
        response: { 204: NoContent, ...errorReplies(401, 403, 404) },
      },
    )
    .get("/api/v1/reports/:id/results", ({ params, query }) => resultsOf(params.id, query), {
      access: "viewer",
      detail: {
        summary: "A page of a report's rows in a view (or every row as CSV with `format=csv`)",
      },
      params: ReportParams,
      query: ReportResultsQuery,
      response: { 200: ReportResultsReply, ...errorReplies(400, 401, 403, 404) },
    })
    .get("/api/json/custom_reports", async () => doc({ data: (await listReports(sql)).map(resource) }), {
      access: "viewer",
      detail: { summary: "List report definitions by name" },
      response: { 200: CustomReportListDocument, ...jsonApiErrorReplies(401, 403) },
    })
    .get(
      "/api/json/custom_reports/:id",
      async ({ params }) => doc({ data: resource(await requireReport(sql, params.id)) }),
      {
        access: "viewer",
        detail: { summary: "One report definition" },
        params: ReportParams,
        response: { 200: CustomReportDocument, ...jsonApiErrorReplies(401, 403, 404) },
      },
    )
    .post(
      "/api/json/custom_reports",
      async ({ body, request }) => {
        const result = await createReport(sql, body.data.attributes);
        if (isInvalid(result)) throw invalidReport(result);
        noteAudit(request, { target: `report:${result.id}`, details: { name: result.name } });
        return doc({ data: resource(result) }, 201);
      },
      {
        access: "operator",
        detail: { summary: "Create a report definition" },
        parse,
        body: CustomReportCreateDocument,
        response: { 201: CustomReportDocument, ...jsonApiErrorReplies(400, 401, 403, 409, 413, 422) },
      },
    )
    .patch(
      "/api/json/custom_reports/:id",
      async ({ params, body, request }) => {
        const current = await requireReport(sql, params.id);
        // JSON:API PATCH updates the attributes sent; the rest stay as they are.
        const result = await updateReport(sql, current.id, {
          name: current.name,
          config: current.config,
          ...body.data.attributes,
        });
        if (isInvalid(result)) throw invalidReport(result);
        noteChanges(request, auditedReport(current), auditedReport(result!));
        return doc({ data: resource(result!) });
      },
      {
        access: "operator",
        detail: { summary: "Change a report definition's name or config" },
        params: ReportParams,
        parse,
        body: CustomReportUpdateDocument,
        response: { 200: CustomReportDocument, ...jsonApiErrorReplies(400, 401, 403, 404, 409, 413, 422) },
      },
    )
    .delete(
      "/api/json/custom_reports/:id",
      async ({ params, request }) => {
        const report = await requireReport(sql, params.id);
        noteAudit(request, { details: { name: report.name } });
        await deleteReport(sql, params.id);
        return doc(null, 204);
      },
      {
        access: "operator",
        detail: { summary: "Delete a report definition and its saved views" },
        params: ReportParams,
        response: { 204: NoContent, ...jsonApiErrorReplies(401, 403, 404) },
      },
    );
}
