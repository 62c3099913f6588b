import { Elysia } from "elysia";
import { outcomeFlash } from "../../ui/flash";
import { consolePages } from "../../ui/page";
import { noteAudit, noteChanges } from "../audit/service";
import { conflictMessage, listBuilderSchemas, productOptions } from "../builder/service";
import { deviceSummaries } from "../devices/service";
import { listViews } from "../fleet/service";
import { actorLabel } from "../jsonapi";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { csvResponse } from "../platform/csv";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { formList } from "../platform/schemas";
import { alertNotFound, changeStatus, getAlert } from "./lifecycle";
import { ALERT_CSV_COLUMNS, alertCsvBatches, listAlerts, parseAlertFilters } from "./listing";
import { AlertBulkForm, AlertButtonForm, AlertsPageQuery, RuleForm, RuleParams } from "./model";
import { alertNotifications } from "./notifications/deliver";
import { notifyPolicy } from "./notifications/queue";
import { AlertPage, DeviceAlertsPanel } from "./pages/alert";
import { AlertsPage, type AlertTab } from "./pages/list";
import { RuleFormPage, type RuleFormProps, type RuleFormValues } from "./pages/rule-form";
import { deviceAlerts } from "./queries";
import {
  type AlertRule,
  createRule,
  deleteRule,
  editBlockedMessage,
  getRule,
  isDeprecated,
  listRules,
  RULE_SORTS,
  type RuleSort,
  RuleValidationError,
  ruleNames,
  ruleValues,
  updateRule,
} from "./rules";
import { MESSAGES } from "./validation";

const canManage = (p: Principal | undefined) => p?.role === "operator" || p?.role === "admin";

const FORM_FIELDS: (keyof RuleFormValues)[] = [
  "name",
  "product_name",
  "condition_field",
  "operator",
  "threshold_value",
  "clear_threshold",
  "for_minutes",
  "resolve_after_minutes",
  "severity",
  "enabled",
  "scope_type",
  "device_ids",
  "scope_view",
  "scope_query",
  "recipients",
];

function valuesOf(rule: AlertRule): RuleFormValues {
  return {
    name: rule.name,
    product_name: rule.productName,
    condition_field: rule.conditionField,
    operator: rule.operator,
    threshold_value: rule.thresholdValue,
    clear_threshold: rule.clearThreshold ?? "",
    for_minutes: String(rule.forMinutes),
    resolve_after_minutes: rule.resolveAfterMinutes === null ? "" : String(rule.resolveAfterMinutes),
    severity: rule.severity,
    enabled: String(rule.enabled),
    scope_type: rule.scopeType,
    device_ids: (rule.deviceIds ?? []).join(", "),
    scope_view: rule.scopeViewId ?? "",
    scope_query: rule.scopeQuery ?? "",
    recipients: rule.recipients.join(", "),
  };
}

const savedField = (rule: AlertRule) => ({
  product: rule.productName,
  key: rule.conditionField,
  type: rule.fieldType,
});

/** The /alerts pages: Active, History and Rules tabs, rule create/edit, alert detail, bulk actions, CSV. */
export function alertRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const { config, database } = ctx;
  const sql = database.sql;

  /** Builds the rule form's props from its current values (schema lists, field options, notices). */
  async function formProps(
    base: Omit<RuleFormProps, "products" | "options" | "notices" | "views">,
  ): Promise<RuleFormProps> {
    const products = (await listBuilderSchemas(sql)).map((r) => r.schema_id);
    const views = (await listViews(database)).map((view) => ({ id: view.id, name: view.name }));
    const values = { ...base.values };
    if (base.mode === "create" && !values.product_name && products[0]) values.product_name = products[0];
    const product = products.find((p) => p === values.product_name);
    const notices: string[] = [];
    const options = product ? ((await productOptions(sql, product)) ?? []) : [];
    if (product && options.length === 0) notices.push("No schema fields are available for this product.");
    const chosen = options.find((o) => o.key === values.condition_field);
    if (values.condition_field && options.length > 0 && !chosen) {
      notices.push("Selected field is no longer valid for the active schema.");
      if (!base.blocked) values.condition_field = "";
    }
    if (chosen?.conflict) notices.push(conflictMessage(chosen));
    return { ...base, values, products, options, notices, views };
  }

  const formValues = (form: RuleForm, fallback?: RuleFormValues): RuleFormValues => {
    const values = {} as RuleFormValues;
    for (const name of FORM_FIELDS) {
      const given = form[name];
      // Repeated (hidden "false" + checkbox "true"): the last value counts.
      const value = Array.isArray(given) ? given[given.length - 1] : given;
      values[name] = value === undefined && fallback ? fallback[name] : (value ?? "");
    }
    return values;
  };
  const EMPTY = formValues({}, undefined);
  EMPTY.for_minutes = "0";
  EMPTY.severity = "warning";
  EMPTY.enabled = "true";
  EMPTY.scope_type = "product";

  const render = async (
    request: Request,
    principal: Principal | undefined,
    props: Omit<RuleFormProps, "products" | "options" | "notices" | "views">,
    status = 200,
  ) => {
    const page = pageContext(request, principal);
    return htmlPage(page, <RuleFormPage ctx={page} props={await formProps(props)} />, status);
  };

  /** The edit form of a stored rule, with what was typed (or its stored values) and what went wrong. */
  const renderEdit = (
    request: Request,
    principal: Principal | undefined,
    rule: AlertRule,
    form: Pick<RuleFormProps, "values"> & Partial<Pick<RuleFormProps, "errors" | "blocked" | "formError">>,
    status = 200,
  ) =>
    render(
      request,
      principal,
      { mode: "edit", ruleId: rule.id, savedField: savedField(rule), errors: {}, ...form },
      status,
    );

  const ruleOr404 = async (raw: string) => {
    const rule = /^\d{1,10}$/.test(raw) ? await getRule(sql, Number(raw)) : undefined;
    if (!rule) throw new AppError(404, "not_found", "Alert rule not found");
    return rule;
  };

  return new Elysia({ name: "alerts" })
    .use(ctx.access)
    .get(
      "/alerts",
      async ({ request, principal, query }) => {
        const tab: AlertTab = query.tab === "history" || query.tab === "rules" ? query.tab : "active";
        const page = pageContext(request, principal);
        const filters = parseAlertFilters(query);
        if (tab === "active") filters.status = "open";
        const ruleSortRaw = tab === "rules" ? (query.sort ?? "") : "";
        const ruleSort = RULE_SORTS.find((s) => s === ruleSortRaw.replace(/^-/, ""));
        const ruleFilter = (query.filter ?? "").slice(0, 200);
        const [list, rules] = await Promise.all([
          tab === "rules"
            ? { items: [], nextCursor: undefined }
            : listAlerts(sql, {
                ...filters,
                cursor: query.cursor,
              }),
          listRules(
            sql,
            tab === "rules"
              ? {
                  filter: ruleFilter,
                  sort: ruleSort as RuleSort | undefined,
                  order: ruleSortRaw.startsWith("-") ? "desc" : "asc",
                }
              : {},
          ),
        ]);
        return htmlPage(
          page,
          <AlertsPage
            ctx={page}
            props={{
              tab,
              canManage: canManage(principal),
              filters: tab === "rules" ? {} : filters,
              ...list,
              rules,
              ruleFilter,
              ruleSort: ruleSortRaw,
            }}
          />,
        );
      },
      { access: "viewer", query: AlertsPageQuery },
    )
    .get("/alerts/rules", () => redirectWithFlash("/alerts?tab=rules"), { access: "viewer" })
    .get(
      "/alerts/export.csv",
      async ({ query }) => {
        const batches = alertCsvBatches(sql, parseAlertFilters(query));
        return csvResponse(`alerts-${new Date().toISOString().slice(0, 10)}.csv`, ALERT_CSV_COLUMNS, batches);
      },
      { access: "viewer", query: AlertsPageQuery },
    )
    .get(
      "/alerts/new",
      ({ request, principal, query }) =>
        render(request, principal, { mode: "create", values: formValues(query, EMPTY), errors: {} }),
      { access: "operator", query: RuleForm },
    )
    .post(
      "/alerts/rules",
      async ({ request, principal, body }) => {
        const values = formValues(body);
        try {
          const rule = await createRule(sql, values, actorLabel(principal));
          noteAudit(request, { target: `alert_rule:${rule.id}` });
        } catch (error) {
          if (!(error instanceof RuleValidationError)) throw error;
          return render(
            request,
            principal,
            { mode: "create", values, errors: error.fields, formError: MESSAGES.form },
            422,
          );
        }
        return redirectWithFlash("/alerts?tab=rules", { kind: "success", text: "Rule created successfully" });
      },
      { access: "operator", body: RuleForm },
    )
    .get(
      "/alerts/:id/edit",
      async ({ request, principal, params, query }) => {
        const rule = await ruleOr404(params.id);
        const blocked = (await isDeprecated(sql, rule)) ? editBlockedMessage(rule) : undefined;
        const values = blocked ? valuesOf(rule) : formValues(query, valuesOf(rule));
        values.name = rule.name;
        return renderEdit(request, principal, rule, { values, blocked });
      },
      { access: "operator", query: RuleForm },
    )
    .post(
      "/alerts/rules/:id",
      async ({ request, principal, params, body }) => {
        const rule = await ruleOr404(params.id);
        const values = formValues(body, valuesOf(rule));
        values.name = rule.name;
        try {
          const updated = await updateRule(sql, rule.id, values);
          noteChanges(request, ruleValues(rule), ruleValues(updated), { details: { name: rule.name } });
        } catch (error) {
          if (error instanceof AppError && error.code === "rule_deprecated") {
            return renderEdit(
              request,
              principal,
              rule,
              { values: valuesOf(rule), blocked: error.message },
              409,
            );
          }
          if (!(error instanceof RuleValidationError)) throw error;
          return renderEdit(
            request,
            principal,
            rule,
            { values, errors: error.fields, formError: MESSAGES.form },
            422,
          );
        }
        return redirectWithFlash("/alerts?tab=rules", { kind: "success", text: "Rule updated successfully" });
      },
      { access: "operator", params: RuleParams, body: RuleForm },
    )
    .post(
      "/alerts/rules/:id/delete",
      async ({ params, request }) => {
        const rule = /^\d{1,10}$/.test(params.id) ? await getRule(sql, Number(params.id)) : undefined;
        const deleted = rule !== undefined && (await deleteRule(sql, rule.id));
        if (deleted) noteAudit(request, { details: { name: rule.name } });
        return redirectWithFlash(
          "/alerts?tab=rules",
          outcomeFlash(deleted, "Rule deleted", "Unable to delete rule"),
        );
      },
      { access: "operator", params: RuleParams, body: AlertButtonForm },
    )
    .post(
      "/alerts/bulk",
      async ({ principal, body, request }) => {
        const ids = formList(body.ids).filter(isUuid);
        const { action } = body;
        const back = body.back?.startsWith("/alerts/") ? body.back : "/alerts";
        if (ids.length === 0 || (action !== "acknowledge" && action !== "resolve")) {
          return redirectWithFlash(back, {
            kind: "error",
            text: "Select at least one alert, then Acknowledge or Resolve.",
          });
        }
        const changed = await changeStatus(
          sql,
          ids,
          {
            status: action === "acknowledge" ? "acknowledged" : "resolved",
            note: body.note ?? "",
            by: actorLabel(principal) ?? "?",
          },
          await notifyPolicy(config, sql),
        );
        noteAudit(request, { details: { changed_ids: changed.map((alert) => alert.id) } });
        const verb = action === "acknowledge" ? "acknowledged" : "resolved";
        return redirectWithFlash(back, { kind: "success", text: `${changed.length} alert(s) ${verb}.` });
      },
      { access: "operator", body: AlertBulkForm },
    )
    .get(
      "/alerts/device/:deviceId",
      async ({ params }) => {
        if (!isUuid(params.deviceId)) throw alertNotFound();
        const html = await (
          <DeviceAlertsPanel deviceId={params.deviceId} alerts={await deviceAlerts(sql, params.deviceId)} />
        );
        return new Response(html, {
          headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
        });
      },
      { access: "viewer" },
    )
    .get(
      "/alerts/:id",
      async ({ request, principal, params }) => {
        const alert = await getAlert(sql, params.id);
        if (!alert) throw alertNotFound();
        const page = pageContext(request, principal);
        const [devices, names, notifications] = await Promise.all([
          deviceSummaries(sql, [alert.deviceId]),
          ruleNames(sql, alert.ruleId === null ? [] : [alert.ruleId]),
          alertNotifications(sql, alert.id),
        ]);
        return htmlPage(
          page,
          <AlertPage
            ctx={page}
            props={{
              alert,
              device: devices.get(alert.deviceId),
              ruleName: alert.ruleId === null ? undefined : names.get(alert.ruleId),
              notifications,
              canManage: canManage(principal),
            }}
          />,
        );
      },
      { access: "viewer" },
    );
}
