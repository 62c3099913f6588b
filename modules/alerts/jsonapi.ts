import { Elysia } from "elysia";
import { noteAudit, noteChanges } from "../audit/service";
import {
  actorLabel,
  jsonApiDocument as document,
  JSONAPI_PREFIX,
  jsonApiNextLink as nextLink,
  jsonApiPageSize as pageSize,
} from "../jsonapi";
import { ResourceIdParams } from "../jsonapi/model";
import type { AppContext } from "../platform/context";
import { AppError, badRequest } from "../platform/errors";
import { readJsonBody } from "../platform/json-body";
import { jsonApiErrorReplies, NoContent } from "../platform/schemas";
import { type Alert, alertJson, alertNotFound, changeStatus, getAlert } from "./lifecycle";
import { listAlerts, parseAlertFilters } from "./listing";
import {
  AlertDocument,
  AlertListDocument,
  AlertListQuery,
  AlertWriteDocument,
  RuleDocument,
  RuleListDocument,
  RuleListQuery,
  RuleWriteDocument,
} from "./model";
import { notifyPolicy } from "./notifications/queue";
import {
  type AlertRule,
  createRule,
  deleteRule,
  getRule,
  isDeprecated,
  listRules,
  RULE_SORTS,
  type RuleSort,
  ruleJson,
  ruleNotFound,
  ruleValues,
  updateRule,
} from "./rules";

const BODY_MAX_BYTES = 64 * 1024;

function ruleResource(rule: AlertRule, deprecated: boolean) {
  const { id, ...attributes } = ruleJson(rule, deprecated);
  return {
    type: "alert_rule",
    id: String(id),
    attributes,
    links: { self: `${JSONAPI_PREFIX}/alert_rules/${id}` },
  };
}

function alertResource(alert: Alert) {
  const { id, ...attributes } = alertJson(alert);
  return {
    type: "alert",
    id,
    attributes,
    relationships: {
      device: { data: { type: "device", id: alert.deviceId } },
      rule: { data: alert.ruleId === null ? null : { type: "alert_rule", id: String(alert.ruleId) } },
    },
    links: { self: `${JSONAPI_PREFIX}/alerts/${id}` },
  };
}

const ruleId = (raw: string) => (/^\d{1,10}$/.test(raw) ? Number(raw) : Number.NaN);

/** JSON:API `alert_rules` (CRUD, the pages' validation) and `alerts` (read, status updates). */
export function alertJsonApiRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  const sql = database.sql;
  const parse = ({ request }: { request: Request }) => readJsonBody(request, BODY_MAX_BYTES);

  return new Elysia({ name: "alerts-jsonapi", prefix: JSONAPI_PREFIX })
    .use(ctx.access)
    .get(
      "/alert_rules",
      async ({ query }) => {
        const rawSort = query.sort ?? "";
        const field = rawSort.replace(/^-/, "");
        if (rawSort && !(RULE_SORTS as readonly string[]).includes(field)) {
          throw badRequest(`sort must be one of ${RULE_SORTS.join(", ")} (prefix - for descending)`, {
            field: "sort",
          });
        }
        const rules = await listRules(sql, {
          filter: query["filter[search]"],
          sort: (field || undefined) as RuleSort | undefined,
          order: rawSort.startsWith("-") ? "desc" : "asc",
          limit: pageSize(query, 500, 1000),
        });
        return document({ data: rules.map((r) => ruleResource(r.rule, r.deprecated)) });
      },
      {
        access: "viewer",
        detail: { summary: "List alert rules, searched and sorted" },
        query: RuleListQuery,
        response: { 200: RuleListDocument, ...jsonApiErrorReplies(400, 401, 403) },
      },
    )
    .get(
      "/alert_rules/:id",
      async ({ params }) => {
        const rule = await getRule(sql, ruleId(params.id));
        if (!rule) throw ruleNotFound();
        return document({ data: ruleResource(rule, await isDeprecated(sql, rule)) });
      },
      {
        access: "viewer",
        detail: { summary: "One alert rule" },
        params: ResourceIdParams,
        response: { 200: RuleDocument, ...jsonApiErrorReplies(401, 403, 404) },
      },
    )
    .post(
      "/alert_rules",
      async ({ body, principal, request }) => {
        const rule = await createRule(sql, body.data.attributes ?? {}, actorLabel(principal));
        noteAudit(request, { target: `alert_rule:${rule.id}`, details: { name: rule.name } });
        return document({ data: ruleResource(rule, false) }, 201);
      },
      {
        access: "operator",
        detail: { summary: "Create an alert rule" },
        parse,
        body: RuleWriteDocument,
        response: { 201: RuleDocument, ...jsonApiErrorReplies(400, 401, 403, 409, 413, 422) },
      },
    )
    .patch(
      "/alert_rules/:id",
      async ({ body, params, request }) => {
        const { id, attributes = {} } = body.data;
        if (id !== undefined && String(id) !== params.id) {
          throw new AppError(409, "id_mismatch", "data.id must match the URL", { field: "data.id" });
        }
        const before = await getRule(sql, ruleId(params.id));
        const rule = await updateRule(sql, ruleId(params.id), attributes);
        if (before)
          noteChanges(request, ruleValues(before), ruleValues(rule), { details: { name: rule.name } });
        return document({ data: ruleResource(rule, false) });
      },
      {
        access: "operator",
        detail: { summary: "Change an alert rule (its name stays)" },
        params: ResourceIdParams,
        parse,
        body: RuleWriteDocument,
        response: { 200: RuleDocument, ...jsonApiErrorReplies(400, 401, 403, 404, 409, 413, 422) },
      },
    )
    .delete(
      "/alert_rules/:id",
      async ({ params, request }) => {
        const rule = await getRule(sql, ruleId(params.id));
        if (!rule || !(await deleteRule(sql, rule.id))) throw ruleNotFound();
        noteAudit(request, { details: { name: rule.name } });
        return new Response(null, { status: 204 });
      },
      {
        access: "operator",
        detail: { summary: "Delete an alert rule" },
        params: ResourceIdParams,
        response: { 204: NoContent, ...jsonApiErrorReplies(401, 403, 404) },
      },
    )
    .get(
      "/alerts",
      async ({ query, request }) => {
        const filters = parseAlertFilters({
          status: query["filter[status]"],
          severity: query["filter[severity]"],
          type: query["filter[type]"],
          device: query["filter[device]"],
          rule: query["filter[rule]"],
          sort: query.sort,
        });
        const list = await listAlerts(sql, {
          ...filters,
          limit: pageSize(query),
          cursor: query["page[after]"] || undefined,
        });
        return document({
          data: list.items.map((i) => alertResource(i.alert)),
          links: { next: nextLink(request, list.nextCursor) },
        });
      },
      {
        access: "viewer",
        detail: { summary: "List alerts, filtered and sorted, a keyset page at a time" },
        query: AlertListQuery,
        response: { 200: AlertListDocument, ...jsonApiErrorReplies(400, 401, 403) },
      },
    )
    .get(
      "/alerts/:id",
      async ({ params }) => {
        const alert = await getAlert(sql, params.id);
        if (!alert) throw alertNotFound();
        return document({ data: alertResource(alert) });
      },
      {
        access: "viewer",
        detail: { summary: "One alert" },
        params: ResourceIdParams,
        response: { 200: AlertDocument, ...jsonApiErrorReplies(401, 403, 404) },
      },
    )
    .patch(
      "/alerts/:id",
      async ({ body, params, principal, request }) => {
        const { attributes } = body.data;
        const alert = await getAlert(sql, params.id);
        if (!alert) throw alertNotFound();
        await changeStatus(
          sql,
          [alert.id],
          { status: attributes.status, note: attributes.note, by: actorLabel(principal) ?? "api" },
          await notifyPolicy(config, sql),
        );
        const after = (await getAlert(sql, alert.id))!;
        noteChanges(
          request,
          { status: alert.status },
          { status: after.status },
          {
            details: attributes.note ? { note: attributes.note.slice(0, 200) } : {},
          },
        );
        return document({ data: alertResource(after) });
      },
      {
        access: "operator",
        detail: { summary: "Acknowledge (with a note) or resolve an alert" },
        params: ResourceIdParams,
        parse,
        body: AlertWriteDocument,
        response: { 200: AlertDocument, ...jsonApiErrorReplies(400, 401, 403, 404, 409, 413, 422) },
      },
    );
}
