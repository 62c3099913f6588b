import { Elysia } from "elysia";
import { outcomeFlash } from "../../ui/flash";
import { consolePages } from "../../ui/page";
import { noteAudit, noteChanges } from "../audit/service";
import { listBuilderSchemas } from "../builder/service";
import { describeScope, listViews, viewNames } from "../fleet/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { formList } from "../platform/schemas";
import {
  createReport,
  deleteReport,
  getReport,
  isInvalid,
  listReports,
  MESSAGES,
  reportOptions,
  requireReport,
  updateReport,
} from "./definitions";
import { reportCsv } from "./export";
import {
  formErrors,
  formInput,
  formValues,
  parseSchemaValue,
  reportValues,
  schemaValue,
} from "./form-values";
import {
  auditedReport,
  ReportButtonForm,
  type Report as ReportDefinition,
  ReportForm,
  ReportListPageQuery,
  ReportPageQuery,
  ReportParams,
  scopeOf,
} from "./model";
import { ReportDetailPage } from "./pages/detail";
import { ReportFormPage, type ReportFormProps, type ReportFormValues } from "./pages/form";
import { DeleteReportPage, ReportListPage } from "./pages/list";
import {
  firstValue,
  hasViewParams,
  listViewKey,
  loadPreferences,
  preferenceScope,
  reportViewKey,
  savePreferences,
  type ViewParams,
} from "./preferences";
import { reportResults, viewFromParams, viewFromQuery } from "./results";

/**
 * Selections the chosen schema does not offer (after a schema change): the select can no longer
 * show them, so each says so inline, as the reference's "reselect required" feedback.
 */
function reselect(values: ReportFormValues, keys: string[] | undefined): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!keys) return errors;
  const known = new Set(keys);
  values.fields.forEach((f, i) => {
    if (!known.has(f.path)) errors[`field_path_${i}`] = `${MESSAGES.invalidField}: ${f.path}. Reselect it.`;
  });
  values.filters.forEach((f, i) => {
    if (f.target.startsWith("path:") && !known.has(f.target.slice(5)))
      errors[`filter_target_${i}`] = `${MESSAGES.invalidField}: ${f.target.slice(5)}. Reselect it.`;
  });
  return errors;
}

const canManage = (principal: Principal | undefined) =>
  principal?.role === "operator" || principal?.role === "admin";

/**
 * The report pages: list, create/edit (one form), detail with CSV export, delete confirmation.
 * Viewers read; operators and admins write.
 */
export function reportPageRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const sql = ctx.database.sql;

  /** Each report's scope in words by report id (views by their names now: one look-up for all). */
  async function scopeTexts(reports: ReportDefinition[]): Promise<Map<string, string>> {
    const scopes = reports.map((report) => ({ report, scope: scopeOf(report.config) }));
    const names = await viewNames(
      sql,
      scopes.flatMap(({ scope }) => (scope.view ? [scope.view] : [])),
    );
    return new Map(
      scopes.map(({ report, scope }) => [
        report.id,
        describeScope(
          {
            type: scope.type,
            product: report.config.schema_id,
            deviceIds: scope.device_ids ?? null,
            query: scope.query ?? null,
          },
          scope.view ? names.get(scope.view) : null,
        ),
      ]),
    );
  }

  async function formPage(
    request: Request,
    principal: Principal | undefined,
    base: Pick<ReportFormProps, "title" | "action">,
    values: ReportFormValues,
    extra: { errors?: Record<string, string>; summary?: string } = {},
    status = 200,
  ) {
    const page = pageContext(request, principal);
    const [refs, options, views] = await Promise.all([
      listBuilderSchemas(sql),
      reportOptions(sql, parseSchemaValue(values.schema)),
      listViews(ctx.database),
    ]);
    const props: ReportFormProps = {
      ...base,
      values,
      schemas: refs.map((r) => ({
        value: schemaValue(r.schema_id),
        label: r.schema_id,
      })),
      options: options.ok ? options.options : [],
      optionsProblem: options.ok ? undefined : options.message,
      errors: {
        ...reselect(values, options.ok ? options.options.map((o) => o.key) : undefined),
        ...extra.errors,
      },
      summary: extra.summary,
      views: views.map((view) => ({ id: view.id, name: view.name })),
    };
    return htmlPage(page, <ReportFormPage ctx={page} props={props} />, status);
  }

  async function save(request: Request, principal: Principal | undefined, body: ReportForm, id?: string) {
    const values = formValues(body);
    const base = id
      ? ({ title: "Edit Report", action: `/reports/${id}` } as const)
      : ({ title: "New Report", action: "/reports" } as const);
    // "Load this schema's fields": show the chosen schema's options, save nothing.
    if (body.reload !== undefined) return formPage(request, principal, base, values);
    const before = id ? await getReport(sql, id) : undefined;
    const result = id
      ? await updateReport(sql, id, formInput(values))
      : await createReport(sql, formInput(values));
    if (result === undefined) throw new AppError(404, "report_not_found", "Report not found");
    if (isInvalid(result))
      return formPage(
        request,
        principal,
        base,
        values,
        { errors: formErrors(result.errors), summary: result.summary },
        422,
      );
    if (before) noteChanges(request, auditedReport(before), auditedReport(result));
    else noteAudit(request, { target: `report:${result.id}`, details: { name: result.name } });
    return redirectWithFlash(`/reports/${result.id}`, {
      kind: "success",
      text: id ? "Report updated successfully" : "Report created successfully",
    });
  }

  return new Elysia({ name: "report-pages" })
    .use(ctx.access)
    .get(
      "/reports",
      async ({ request, principal, query }) => {
        let params: ViewParams = query;
        const scope = preferenceScope(principal);
        if (scope && hasViewParams(params)) await savePreferences(sql, scope, listViewKey, params);
        else if (scope) params = await loadPreferences(sql, scope, listViewKey);
        const name = (firstValue(params, "name") ?? "").trim().slice(0, 120);
        const fields = [
          ...new Set(
            formList(params.field)
              .map((f) => f.trim().toLowerCase())
              .filter(Boolean),
          ),
        ].slice(0, 20);
        const dir = firstValue(params, "sort_dir") === "desc" ? "desc" : "asc";
        const [reports, options] = await Promise.all([
          listReports(sql, { name, fields, dir }),
          ctx.reportOptions.get(null),
        ]);
        const page = pageContext(request, principal);
        return htmlPage(
          page,
          <ReportListPage
            ctx={page}
            props={{
              reports,
              scopes: await scopeTexts(reports),
              name,
              fields,
              dir,
              options: options.ok ? options.options : [],
              canManage: canManage(principal),
              notice: scope ? undefined : "Saved report view preferences are unavailable for this session.",
            }}
          />,
        );
      },
      { access: "viewer", query: ReportListPageQuery },
    )
    .get(
      "/reports/new",
      ({ request, principal }) =>
        formPage(request, principal, { title: "New Report", action: "/reports" }, formValues({})),
      { access: "operator" },
    )
    .post("/reports", ({ request, principal, body }) => save(request, principal, body), {
      access: "operator",
      body: ReportForm,
    })
    .get(
      "/reports/:id",
      async ({ request, principal, params, query }) => {
        if (params.id.endsWith(".csv")) {
          const report = await requireReport(sql, params.id.slice(0, -4));
          return reportCsv(sql, ctx.reportOptions, report, viewFromQuery(query), {
            onlineWindowSeconds: (await ctx.settings.device()).onlineWindowSeconds,
          });
        }
        const report = await requireReport(sql, params.id);
        let view: ViewParams = query;
        const scope = preferenceScope(principal);
        const key = reportViewKey(report.id);
        const fromSaved = Boolean(scope) && !hasViewParams(view);
        // A page of a paged walk (cursor) is not a new preference.
        if (scope && hasViewParams(view) && query.cursor === undefined)
          await savePreferences(sql, scope, key, view);
        else if (scope && !hasViewParams(view)) view = await loadPreferences(sql, scope, key);
        const results = await reportResults(sql, ctx.reportOptions, report, viewFromParams(view), {
          strict: false,
          onlineWindowSeconds: (await ctx.settings.device()).onlineWindowSeconds,
        });
        const page = pageContext(request, principal);
        return htmlPage(
          page,
          <ReportDetailPage
            ctx={page}
            props={{
              report,
              scope: (await scopeTexts([report])).get(report.id)!,
              results,
              problems: results.problems,
              fromSaved,
              canManage: canManage(principal),
              preferencesUnavailable: !scope,
            }}
          />,
        );
      },
      { access: "viewer", params: ReportParams, query: ReportPageQuery },
    )
    .get(
      "/reports/:id/edit",
      async ({ request, principal, params }) => {
        const report = await requireReport(sql, params.id);
        return formPage(
          request,
          principal,
          { title: "Edit Report", action: `/reports/${report.id}` },
          reportValues(report),
        );
      },
      { access: "operator" },
    )
    .post(
      "/reports/:id",
      ({ request, principal, body, params }) => save(request, principal, body, params.id),
      { access: "operator", params: ReportParams, body: ReportForm },
    )
    .get(
      "/reports/:id/delete",
      async ({ request, principal, params }) => {
        const report = await requireReport(sql, params.id);
        const page = pageContext(request, principal);
        return htmlPage(page, <DeleteReportPage ctx={page} report={report} />);
      },
      { access: "operator" },
    )
    .post(
      "/reports/:id/delete",
      async ({ params, request }) => {
        const report = await getReport(sql, params.id);
        const deleted = report ? await deleteReport(sql, report.id) : false;
        if (report && deleted) noteAudit(request, { details: { name: report.name } });
        return redirectWithFlash(
          "/reports",
          outcomeFlash(deleted, "Report deleted", "Failed to delete report."),
        );
      },
      { access: "operator", params: ReportParams, body: ReportButtonForm },
    );
}
