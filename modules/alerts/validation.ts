import { conflictMessage, productOptions, type SchemaOption } from "../builder/service";
import { checkScope, type ScopeType } from "../fleet/service";
import type { Sql } from "../platform/database";
import { isUuid } from "../platform/json-body";
import { type AlertRuleInput, operatorsFor, type RuleOperator, SEVERITIES, type Severity } from "./model";

/**
 * Rule validation with the reference's messages (original-e2e-and-ui.md §7.1, §7.6), plus our
 * additions (duration, severity, auto-resolve, hysteresis, scope, recipients). Pages show the
 * messages next to the fields; JSON:API answers 422 `validation_failed` with them in `meta.fields`.
 */
export const MESSAGES = {
  name: "Enter a rule name.",
  nameTaken: "A rule with this name already exists.",
  nameImmutable: "The rule name cannot be changed.",
  product: "Select a schema product before saving.",
  unavailable: "Schema options are unavailable.",
  noFields: "This schema has no available fields for rules.",
  field: "Select a schema field.",
  fieldInvalid: "Selected field is invalid for the active schema.",
  operator: "Operator is not valid for the selected field type.",
  threshold: "Threshold value is invalid for the selected field type.",
  clear: "The clear threshold must be a number on the recovering side of the threshold.",
  clearText: "A clear threshold needs a number field and one of > >= < <=.",
  minutes: "Enter whole minutes from 0 to 10080.",
  severity: "Choose info, warning or critical.",
  enabled: "Enabled must be true or false.",
  devices: "List device ids (UUIDs): at least one, at most 500.",
  recipients: "Enter email addresses separated by commas.",
  form: "Unable to save rule. Correct the highlighted fields.",
} as const;

export const LIMITS = { name: 120, text: 200, threshold: 500, minutes: 10_080, devices: 500, recipients: 20 };

export type RuleField = keyof AlertRuleInput;
export type RuleErrors = Partial<Record<RuleField, string>>;

/** A rule's values after validation, ready to store. */
export interface RuleValues {
  name: string;
  productName: string;
  conditionField: string;
  fieldType: string;
  operator: RuleOperator;
  thresholdValue: string;
  clearThreshold: string | null;
  forMinutes: number;
  resolveAfterMinutes: number | null;
  severity: Severity;
  enabled: boolean;
  /** Which devices the rule watches (modules/fleet/scope.ts); the product only picks the field. */
  scopeType: ScopeType;
  deviceIds: string[] | null;
  scopeViewId: string | null;
  scopeQuery: string | null;
  recipients: string[];
}

const EMAIL = /^[^\s@,]+@[^\s@,]+\.[^\s@,]+$/;

function textOf(value: unknown): string | undefined {
  if (typeof value === "string") return value.trim();
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  return undefined;
}

/** A whole string that parses as a finite number ("50", " 1.5 ", "-2e3"; not "50kg" or ""). */
export function parseNumber(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === "" || !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(trimmed)) return undefined;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : undefined;
}

function minutes(value: unknown, nullable: boolean): { ok: true; value: number | null } | { ok: false } {
  if (value === undefined || value === null || value === "")
    return nullable ? { ok: true, value: null } : { ok: true, value: 0 };
  const text = textOf(value);
  if (text === undefined || !/^\d+$/.test(text) || Number(text) > LIMITS.minutes) return { ok: false };
  return { ok: true, value: Number(text) };
}

function list(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return value.split(/[\s,]+/).filter(Boolean);
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.map((v) => v.trim());
  return undefined;
}

function bool(value: unknown): boolean | undefined {
  if (value === undefined || value === "") return true; // blank form field: the default
  if (typeof value === "boolean") return value;
  if (["true", "on", "1"].includes(String(value))) return true;
  if (["false", "off", "0"].includes(String(value))) return false;
  return undefined;
}

async function schemaOptions(
  sql: Sql,
  product: string,
): Promise<{ options: SchemaOption[] } | { error: string }> {
  const options = await productOptions(sql, product);
  if (!options) return { error: MESSAGES.unavailable };
  return options.length === 0 ? { error: MESSAGES.noFields } : { options };
}

/**
 * Validates a whole rule. On update (`existing`), omitted fields keep their stored values and the
 * name may not change (reference). Returns every field's error at once, or the values to store.
 */
export async function checkRule(
  sql: Sql,
  input: AlertRuleInput,
  existing?: RuleValues,
): Promise<{ values: RuleValues } | { errors: RuleErrors }> {
  const errors: RuleErrors = {};
  const pick = (field: RuleField, stored: unknown) =>
    existing && input[field] === undefined ? stored : input[field];

  let name = existing?.name ?? "";
  if (existing) {
    const sent = textOf(input.name);
    if (input.name !== undefined && sent !== existing.name) errors.name = MESSAGES.nameImmutable;
  } else {
    name = typeof input.name === "string" ? input.name.trim() : "";
    if (name === "" || name.length > LIMITS.name) errors.name = MESSAGES.name;
  }

  const product = textOf(pick("product_name", existing?.productName)) ?? "";
  let options: SchemaOption[] = [];
  if (product === "" || product.length > LIMITS.text) errors.product_name = MESSAGES.product;
  else {
    const checked = await schemaOptions(sql, product);
    if ("error" in checked) errors.product_name = checked.error;
    else options = checked.options;
  }

  // A field is valid while any approved device of the product declares it. One whose type the devices
  // disagree on cannot be picked anew; a rule already on it keeps the type it was saved with.
  const field = textOf(pick("condition_field", existing?.conditionField)) ?? "";
  const option = options.find((o) => o.key === field);
  const keepsType =
    option?.conflict !== undefined && existing?.conditionField === field && existing.productName === product;
  if (field === "") errors.condition_field = MESSAGES.field;
  else if (options.length > 0 && !option) errors.condition_field = MESSAGES.fieldInvalid;
  else if (option?.conflict && !keepsType) errors.condition_field = conflictMessage(option);
  const fieldType =
    (keepsType ? existing?.fieldType : option?.value_type) ?? existing?.fieldType ?? "unknown";
  const numeric = fieldType === "number" || fieldType === "integer";

  let operator = textOf(pick("operator", existing?.operator)) ?? "";
  if (operator === "") operator = numeric ? ">" : "is";
  if (!numeric && operator === "=") operator = "is";
  if (!numeric && operator === "!=") operator = "is not";
  if (option && !errors.condition_field && !operatorsFor(fieldType).includes(operator as RuleOperator))
    errors.operator = MESSAGES.operator;

  const threshold = textOf(pick("threshold_value", existing?.thresholdValue));
  if (
    threshold === undefined ||
    threshold === "" ||
    threshold.length > LIMITS.threshold ||
    (numeric && parseNumber(threshold) === undefined)
  )
    errors.threshold_value = MESSAGES.threshold;

  const clearRaw = pick("clear_threshold", existing?.clearThreshold);
  let clear: string | null = null;
  if (clearRaw !== undefined && clearRaw !== null && clearRaw !== "") {
    const text = textOf(clearRaw);
    const value = text === undefined ? undefined : parseNumber(text);
    const limit = threshold === undefined ? undefined : parseNumber(threshold);
    if (!numeric || ![">", ">=", "<", "<="].includes(operator)) errors.clear_threshold = MESSAGES.clearText;
    else if (value === undefined) errors.clear_threshold = MESSAGES.clear;
    else if (limit !== undefined && (operator.startsWith(">") ? value > limit : value < limit))
      errors.clear_threshold = MESSAGES.clear;
    else clear = text!;
  }

  const forMinutes = minutes(pick("for_minutes", existing?.forMinutes), false);
  if (!forMinutes.ok) errors.for_minutes = MESSAGES.minutes;
  const resolveAfter = minutes(pick("resolve_after_minutes", existing?.resolveAfterMinutes), true);
  if (!resolveAfter.ok) errors.resolve_after_minutes = MESSAGES.minutes;

  const severityRaw = pick("severity", existing?.severity);
  const severity =
    severityRaw === undefined || severityRaw === null || severityRaw === ""
      ? "warning"
      : SEVERITIES.find((s) => s === textOf(severityRaw));
  if (!severity) errors.severity = MESSAGES.severity;

  const enabled = bool(pick("enabled", existing?.enabled));
  if (enabled === undefined) errors.enabled = MESSAGES.enabled;

  const devices = list(pick("device_ids", existing?.deviceIds));
  // Before scopes, a device list alone chose the devices: a request without scope_type still means that.
  const listed = devices && devices.length > 0 ? "devices" : "product";
  const scopeType =
    input.scope_type !== undefined && input.scope_type !== null && input.scope_type !== ""
      ? input.scope_type
      : input.device_ids !== undefined || !existing
        ? listed
        : existing.scopeType;
  const scope = await checkScope(sql, {
    type: scopeType,
    deviceIds: devices ? [...new Set(devices.map((d) => d.toLowerCase()))] : null,
    view: pick("scope_view", existing?.scopeViewId),
    query: pick("scope_query", existing?.scopeQuery),
  });
  if ("problem" in scope) errors[scope.problem.field] = scope.problem.message;
  else if (
    scope.scope.type === "devices" &&
    (!devices || devices.length === 0 || devices.length > LIMITS.devices || !devices.every(isUuid))
  )
    errors.device_ids = MESSAGES.devices;

  const recipients = list(pick("recipients", existing?.recipients));
  if (
    !recipients ||
    recipients.length > LIMITS.recipients ||
    !recipients.every((r) => EMAIL.test(r) && r.length <= 254)
  )
    errors.recipients = MESSAGES.recipients;

  if (Object.keys(errors).length > 0 || "problem" in scope) return { errors };
  return {
    values: {
      name,
      productName: product,
      conditionField: field,
      fieldType,
      operator: operator as RuleOperator,
      thresholdValue: threshold!,
      clearThreshold: clear,
      forMinutes: forMinutes.ok ? forMinutes.value! : 0,
      resolveAfterMinutes: resolveAfter.ok ? resolveAfter.value : null,
      severity: severity!,
      enabled: enabled!,
      ...storedScope(scope),
      recipients: [...new Set(recipients!.map((r) => r.toLowerCase()))],
    },
  };
}

function storedScope(checked: Awaited<ReturnType<typeof checkScope>>) {
  const scope = "scope" in checked ? checked.scope : { type: "product" as const };
  return {
    scopeType: scope.type,
    deviceIds: scope.type === "devices" ? (scope.deviceIds ?? null) : null,
    scopeViewId: scope.viewId ?? null,
    scopeQuery: scope.query ?? null,
  };
}
