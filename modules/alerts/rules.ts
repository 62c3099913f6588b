import { conflictMessage, productOptions, type SchemaOption } from "../builder/service";
import { type DeviceScope, type ScopeType, viewNames } from "../fleet/service";
import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import type { AlertRuleInput, AlertRuleJson, RuleOperator, Severity } from "./model";
import { checkRule, MESSAGES, type RuleErrors, type RuleValues } from "./validation";

export interface AlertRule extends RuleValues {
  id: number;
  /** A view scope's view name now (null: another scope). */
  scopeViewName: string | null;
  createdAt: Date;
  updatedAt: Date;
}

type RuleRow = {
  id: number;
  name: string;
  product_name: string;
  condition_field: string;
  field_type: string;
  operator: string;
  threshold_value: string;
  clear_threshold: string | null;
  for_minutes: number;
  resolve_after_minutes: number | null;
  severity: string;
  enabled: boolean;
  scope_type: string;
  device_ids: string[] | null;
  scope_view_id: string | null;
  scope_query: string | null;
  recipients: string[];
  created_at: Date;
  updated_at: Date;
};

function toRule(row: RuleRow): AlertRule {
  return {
    id: row.id,
    name: row.name,
    productName: row.product_name,
    conditionField: row.condition_field,
    fieldType: row.field_type,
    operator: row.operator as RuleOperator,
    thresholdValue: row.threshold_value,
    clearThreshold: row.clear_threshold,
    forMinutes: row.for_minutes,
    resolveAfterMinutes: row.resolve_after_minutes,
    severity: row.severity as Severity,
    enabled: row.enabled,
    scopeType: row.scope_type as ScopeType,
    deviceIds: row.device_ids,
    scopeViewId: row.scope_view_id,
    scopeViewName: null,
    scopeQuery: row.scope_query,
    recipients: row.recipients,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function ruleJson(rule: AlertRule, deprecated: boolean): AlertRuleJson {
  return {
    id: rule.id,
    name: rule.name,
    product_name: rule.productName,
    condition_field: rule.conditionField,
    field_type: rule.fieldType,
    operator: rule.operator,
    threshold_value: rule.thresholdValue,
    clear_threshold: rule.clearThreshold,
    for_minutes: rule.forMinutes,
    resolve_after_minutes: rule.resolveAfterMinutes,
    severity: rule.severity,
    enabled: rule.enabled,
    scope_type: rule.scopeType,
    device_ids: rule.deviceIds,
    scope_view: rule.scopeViewId,
    scope_view_name: rule.scopeViewName,
    scope_query: rule.scopeQuery,
    recipients: rule.recipients,
    deprecated,
    created_at: rule.createdAt.toISOString(),
    updated_at: rule.updatedAt.toISOString(),
  };
}

/** A failed save: 422 with every field's message (`details.fields`), nothing stored. */
export class RuleValidationError extends AppError {
  constructor(readonly fields: RuleErrors) {
    super(422, "validation_failed", MESSAGES.form, { fields });
  }
}

export const ruleNotFound = () => new AppError(404, "not_found", "Alert rule not found");

export async function getRule(sql: Sql, id: number): Promise<AlertRule | undefined> {
  if (!Number.isSafeInteger(id) || id < 1 || id > 2_147_483_647) return undefined;
  const [row] = await sql<RuleRow[]>`select * from alert_rules where id = ${id}`;
  return row && (await named(sql, [toRule(row)]))[0];
}

/** Rules with their view scopes' names (the fleet feature's views, read through its door). */
async function named(sql: Sql, rules: AlertRule[]): Promise<AlertRule[]> {
  const names = await viewNames(
    sql,
    rules.flatMap((r) => (r.scopeViewId ? [r.scopeViewId] : [])),
  );
  for (const rule of rules)
    rule.scopeViewName = rule.scopeViewId ? (names.get(rule.scopeViewId) ?? null) : null;
  return rules;
}

/** A rule's scope as the fleet feature decides membership of it. */
export function ruleScope(rule: AlertRule): DeviceScope {
  return {
    type: rule.scopeType,
    product: rule.productName,
    deviceIds: rule.deviceIds,
    viewId: rule.scopeViewId,
    query: rule.scopeQuery,
  };
}

/** The rules scoped to this view (a view in use cannot be deleted: modules/fleet asks). */
export async function rulesUsingView(sql: Sql, viewId: string): Promise<{ id: number; name: string }[]> {
  return sql<{ id: number; name: string }[]>`select id, name from alert_rules
    where scope_view_id = ${viewId}::uuid order by lower(name)`;
}

/** The view was deleted between the check and the write (its foreign key refused the row). */
function viewGone(error: unknown): unknown {
  return (error as { code?: string }).code === "23503"
    ? new RuleValidationError({ scope_view: "This saved view was just deleted: choose another." })
    : error;
}

function isNameConflict(error: unknown): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { code?: string }).code === "23505" &&
    String((error as { constraint_name?: string }).constraint_name).includes("name")
  );
}

/** A rule's values by their API names, what an edit changes (the audit log compares them before and after). */
export function ruleValues(rule: AlertRule): Record<string, unknown> {
  const {
    id: _id,
    deprecated: _deprecated,
    created_at: _created,
    updated_at: _updated,
    ...values
  } = ruleJson(rule, false);
  return values;
}

export async function createRule(sql: Sql, input: AlertRuleInput, by?: string): Promise<AlertRule> {
  const checked = await checkRule(sql, input);
  if ("errors" in checked) throw new RuleValidationError(checked.errors);
  const v = checked.values;
  try {
    const [row] = await sql<RuleRow[]>`
      insert into alert_rules (name, product_name, condition_field, field_type, operator,
        threshold_value, clear_threshold, for_minutes, resolve_after_minutes, severity, enabled, scope_type,
        device_ids, scope_view_id, scope_query, recipients, created_by)
      values (${v.name}, ${v.productName}, ${v.conditionField}, ${v.fieldType}, ${v.operator},
        ${v.thresholdValue}, ${v.clearThreshold}, ${v.forMinutes}, ${v.resolveAfterMinutes}, ${v.severity},
        ${v.enabled}, ${v.scopeType}, ${v.deviceIds}::uuid[], ${v.scopeViewId}::uuid, ${v.scopeQuery},
        ${v.recipients}::text[], ${by ?? null})
      returning *`;
    return (await named(sql, [toRule(row!)]))[0]!;
  } catch (error) {
    if (isNameConflict(error)) throw new RuleValidationError({ name: MESSAGES.nameTaken });
    throw viewGone(error);
  }
}

/** Updates a rule (name immutable). A deprecated rule cannot be edited (reference). */
export async function updateRule(sql: Sql, id: number, input: AlertRuleInput): Promise<AlertRule> {
  const existing = await getRule(sql, id);
  if (!existing) throw ruleNotFound();
  if (await isDeprecated(sql, existing)) {
    throw new AppError(409, "rule_deprecated", editBlockedMessage(existing));
  }
  const checked = await checkRule(sql, input, existing);
  if ("errors" in checked) throw new RuleValidationError(checked.errors);
  const v = checked.values;
  const [row] = await sql<RuleRow[]>`
    update alert_rules set product_name = ${v.productName},
      condition_field = ${v.conditionField}, field_type = ${v.fieldType}, operator = ${v.operator},
      threshold_value = ${v.thresholdValue}, clear_threshold = ${v.clearThreshold}, for_minutes = ${v.forMinutes},
      resolve_after_minutes = ${v.resolveAfterMinutes}, severity = ${v.severity}, enabled = ${v.enabled},
      scope_type = ${v.scopeType}, device_ids = ${v.deviceIds}::uuid[], scope_view_id = ${v.scopeViewId}::uuid,
      scope_query = ${v.scopeQuery}, recipients = ${v.recipients}::text[], updated_at = now()
    where id = ${id} returning *`.catch((error) => {
    throw viewGone(error);
  });
  if (!row) throw ruleNotFound();
  // A changed condition starts a new evaluation: the old breach/clear timing no longer applies.
  await sql`delete from alert_rule_states where rule_id = ${id}`;
  return (await named(sql, [toRule(row)]))[0]!;
}

/** Deletes a rule; its open alerts stay as history (rule_id kept, as in the reference: no FK). */
export async function deleteRule(sql: Sql, id: number): Promise<boolean> {
  if (!Number.isSafeInteger(id) || id < 1 || id > 2_147_483_647) return false;
  const rows = await sql`delete from alert_rules where id = ${id} returning id`;
  await sql`delete from alert_rule_states where rule_id = ${id}`;
  return rows.length > 0;
}

export function editBlockedMessage(rule: Pick<AlertRule, "productName">): string {
  return `This rule references a schema field that is no longer valid for ${rule.productName}. Editing is disabled.`;
}

/** Per product, its current field options (null: none), for checking many rules with one lookup each. */
export type OptionsCache = Map<string, Map<string, SchemaOption> | null>;

async function fieldOption(
  sql: Sql,
  rule: Pick<AlertRule, "productName" | "conditionField">,
  cache: OptionsCache,
): Promise<SchemaOption | undefined> {
  if (!cache.has(rule.productName)) {
    const options = await productOptions(sql, rule.productName);
    cache.set(rule.productName, options && new Map(options.map((o) => [o.key, o])));
  }
  return cache.get(rule.productName)?.get(rule.conditionField);
}

/**
 * Deprecated: the rule's field is declared by no approved device of its product any more (reference).
 * Installing or removing scripts on some devices never deprecates a rule while one device keeps the field.
 */
export async function isDeprecated(
  sql: Sql,
  rule: Pick<AlertRule, "productName" | "conditionField">,
  cache: OptionsCache = new Map(),
): Promise<boolean> {
  return (await fieldOption(sql, rule, cache)) === undefined;
}

/** The rule's field state for operators: deprecated, or declared with different types (the message), or fine. */
export async function fieldStatus(
  sql: Sql,
  rule: Pick<AlertRule, "productName" | "conditionField">,
  cache: OptionsCache = new Map(),
): Promise<{ deprecated: boolean; conflict: string | null }> {
  const option = await fieldOption(sql, rule, cache);
  return { deprecated: !option, conflict: option?.conflict ? conflictMessage(option) : null };
}

export const RULE_SORTS = [
  "product_name",
  "name",
  "condition_field",
  "operator",
  "severity",
  "updated_at",
] as const;
export type RuleSort = (typeof RULE_SORTS)[number];

export interface RuleListOptions {
  filter?: string;
  sort?: RuleSort;
  order?: "asc" | "desc";
  limit?: number;
}

/**
 * Rules for the Rules tab and JSON:API: the filter is a case-insensitive substring over product,
 * name, field, operator and threshold (reference); sort among RULE_SORTS (default product asc).
 */
export async function listRules(
  sql: Sql,
  options: RuleListOptions = {},
): Promise<{ rule: AlertRule; deprecated: boolean; conflict: string | null }[]> {
  const sort = RULE_SORTS.includes(options.sort as RuleSort) ? options.sort! : "product_name";
  const order = options.order === "desc" ? sql`desc` : sql`asc`;
  const needle = options.filter?.trim() ? `%${options.filter.trim().replace(/[\\%_]/g, "\\$&")}%` : null;
  const rows = await sql<RuleRow[]>`
    select * from alert_rules
    where ${needle}::text is null or product_name ilike ${needle} or name ilike ${needle}
      or condition_field ilike ${needle} or operator ilike ${needle} or threshold_value ilike ${needle}
    order by ${sql(sort)} ${order}, id
    limit ${Math.min(options.limit ?? 1000, 1000)}`;
  const cache: OptionsCache = new Map();
  const result = [];
  for (const rule of await named(sql, rows.map(toRule))) {
    result.push({ rule, ...(await fieldStatus(sql, rule, cache)) });
  }
  return result;
}

/** Enabled rules (evaluation reads them once per run). */
export async function enabledRules(sql: Sql): Promise<AlertRule[]> {
  return (await sql<RuleRow[]>`select * from alert_rules where enabled order by id`).map(toRule);
}

/** Rule names by id (alert lists show them; a deleted rule has none). */
export async function ruleNames(sql: Sql, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<
    { id: number; name: string }[]
  >`select id, name from alert_rules where id = any(${ids}::int[])`;
  return new Map(rows.map((r) => [r.id, r.name]));
}
