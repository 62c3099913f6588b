import { type Static, Type as t } from "@sinclair/typebox";
import { SCOPE_TYPES } from "../fleet/service";
import {
  allDocument,
  changeDocument,
  listDocument,
  oneDocument,
  pageQuery,
  resourceSchema,
  writeDocument,
} from "../jsonapi/model";
import { ButtonForm, ConsoleForm, FormList, FormText } from "../platform/schemas";

/** Wire shapes of the alerts feature (JSON:API `alert_rule` and `alert`, webhook body); types derive from them. */

export const SEVERITIES = ["info", "warning", "critical"] as const;
export type Severity = (typeof SEVERITIES)[number];
export const ALERT_STATUSES = ["active", "acknowledged", "resolved"] as const;
export type AlertStatus = (typeof ALERT_STATUSES)[number];
export const ALERT_TYPES = ["threshold", "offline"] as const;
export type AlertType = (typeof ALERT_TYPES)[number];

export const NUMBER_OPERATORS = [">", ">=", "=", "<=", "<", "!="] as const;
export const TEXT_OPERATORS = ["contains", "doesn't contain", "is", "is not"] as const;
export type RuleOperator = (typeof NUMBER_OPERATORS)[number] | (typeof TEXT_OPERATORS)[number];

/** Operators a field of this `value_type` offers (reference: number → comparisons; anything else → text). */
export function operatorsFor(valueType: string): readonly RuleOperator[] {
  return valueType === "number" || valueType === "integer" ? NUMBER_OPERATORS : TEXT_OPERATORS;
}

export const AlertRuleJson = t.Object({
  id: t.Integer(),
  name: t.String(),
  product_name: t.String(),
  condition_field: t.String(),
  field_type: t.String(),
  operator: t.String(),
  threshold_value: t.String(),
  clear_threshold: t.Union([t.String(), t.Null()]),
  for_minutes: t.Integer(),
  resolve_after_minutes: t.Union([t.Integer(), t.Null()]),
  severity: t.Union(SEVERITIES.map((s) => t.Literal(s))),
  enabled: t.Boolean(),
  scope_type: t.Union(
    SCOPE_TYPES.map((s) => t.Literal(s)),
    {
      description:
        "Which devices the rule watches: fleet, product (every device of product_name), devices, view, query",
    },
  ),
  device_ids: t.Union([t.Array(t.String()), t.Null()], { description: "The devices of a devices scope" }),
  scope_view: t.Union([t.String(), t.Null()], { description: "A view scope's saved view (id)" }),
  scope_view_name: t.Union([t.String(), t.Null()], { description: "That view's name now" }),
  scope_query: t.Union([t.String(), t.Null()], { description: "A query scope's fleet query" }),
  recipients: t.Array(t.String()),
  deprecated: t.Boolean(),
  created_at: t.String(),
  updated_at: t.String(),
});
export type AlertRuleJson = Static<typeof AlertRuleJson>;

/**
 * What a rule form or a JSON:API document may send. Values are `unknown` on purpose: a wrong type is
 * a field error with the reference's message (rules.ts), not a generic schema failure.
 */
export const AlertRuleInput = t.Object({
  name: t.Optional(t.Unknown()),
  product_name: t.Optional(t.Unknown()),
  /** Accepted from older clients and ignored: a rule is about its product's field, not a schema version. */
  schema_version: t.Optional(t.Unknown()),
  condition_field: t.Optional(t.Unknown()),
  operator: t.Optional(t.Unknown()),
  threshold_value: t.Optional(t.Unknown()),
  clear_threshold: t.Optional(t.Unknown()),
  for_minutes: t.Optional(t.Unknown()),
  resolve_after_minutes: t.Optional(t.Unknown()),
  severity: t.Optional(t.Unknown()),
  enabled: t.Optional(t.Unknown()),
  scope_type: t.Optional(t.Unknown()),
  device_ids: t.Optional(t.Unknown()),
  /** A view scope's saved view: its id or its name. */
  scope_view: t.Optional(t.Unknown()),
  scope_query: t.Optional(t.Unknown()),
  recipients: t.Optional(t.Unknown()),
});
export type AlertRuleInput = Static<typeof AlertRuleInput>;
export const RULE_INPUT_FIELDS = Object.keys(AlertRuleInput.properties) as (keyof AlertRuleInput)[];

export const AlertJson = t.Object({
  id: t.String(),
  type: t.Union(ALERT_TYPES.map((s) => t.Literal(s))),
  status: t.Union(ALERT_STATUSES.map((s) => t.Literal(s))),
  severity: t.String(),
  message: t.String(),
  device_id: t.String(),
  rule_id: t.Union([t.Integer(), t.Null()]),
  value: t.Union([t.String(), t.Null()]),
  triggered_at: t.String(),
  acknowledged_at: t.Union([t.String(), t.Null()]),
  acknowledged_by: t.Union([t.String(), t.Null()]),
  ack_note: t.Union([t.String(), t.Null()]),
  resolved_at: t.Union([t.String(), t.Null()]),
  resolved_by: t.Union([t.String(), t.Null()]),
  resolution: t.Union([t.String(), t.Null()]),
});
export type AlertJson = Static<typeof AlertJson>;

/** PATCH of an alert: only the status moves (acknowledge with an optional note, or resolve). */
export const AlertStatusUpdate = t.Object(
  {
    status: t.Union([t.Literal("acknowledged"), t.Literal("resolved")]),
    note: t.Optional(t.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
);
export type AlertStatusUpdate = Static<typeof AlertStatusUpdate>;

/** The webhook body (issue #15): what, where, since when. */
export const WebhookBody = t.Object({
  id: t.String(),
  type: t.String(),
  severity: t.String(),
  status: t.String(),
  message: t.String(),
  device: t.Object({
    id: t.String(),
    name: t.Union([t.String(), t.Null()]),
    mac_address: t.Union([t.String(), t.Null()]),
    product_name: t.Union([t.String(), t.Null()]),
  }),
  rule: t.Union([t.Object({ id: t.Integer(), name: t.String() }), t.Null()]),
  triggered_at: t.String(),
  resolved_at: t.Union([t.String(), t.Null()]),
});
export type WebhookBody = Static<typeof WebhookBody>;

// ---------------------------------------------------------------- JSON:API documents

export const RuleListQuery = t.Object(
  {
    "filter[search]": t.Optional(t.String({ description: "Part of the name, product or field" })),
    sort: t.Optional(t.String({ description: "A rule sort, `-` before it for descending" })),
    ...pageQuery(1000),
  },
  { additionalProperties: true },
);

export const RuleResource = resourceSchema("alert_rule", t.Omit(AlertRuleJson, ["id"]));
export const RuleListDocument = allDocument(RuleResource);
export const RuleDocument = oneDocument(RuleResource);

export const AlertListQuery = t.Object(
  {
    "filter[status]": t.Optional(t.String({ description: ALERT_STATUSES.join(", ") })),
    "filter[severity]": t.Optional(t.String({ description: SEVERITIES.join(", ") })),
    "filter[type]": t.Optional(t.String({ description: ALERT_TYPES.join(", ") })),
    "filter[device]": t.Optional(t.String({ description: "A device id" })),
    "filter[rule]": t.Optional(t.String({ description: "A rule id" })),
    sort: t.Optional(t.String({ description: "An alert sort, `-` before it for descending" })),
    ...pageQuery(500),
  },
  { additionalProperties: true },
);

const Relation = (type: string) =>
  t.Object({ data: t.Union([t.Object({ type: t.Literal(type), id: t.String() }), t.Null()]) });

export const AlertResource = resourceSchema(
  "alert",
  t.Omit(AlertJson, ["id"]),
  t.Object({ device: Relation("device"), rule: Relation("alert_rule") }),
);
export const AlertListDocument = listDocument(AlertResource);
export const AlertDocument = oneDocument(AlertResource);

/** `POST`/`PATCH /api/json/alert_rules…`: only rule fields (rules.ts checks their values). */
export const RuleWriteDocument = writeDocument(
  "alert_rule",
  t.Object(AlertRuleInput.properties, { additionalProperties: false }),
);

/** `PATCH /api/json/alerts/:id`: a status change; anything else is 422 invalid_attribute. */
export const AlertWriteDocument = changeDocument(
  "alert",
  t.Object(AlertStatusUpdate.properties, {
    additionalProperties: false,
    refusal: {
      status: 422,
      code: "invalid_attribute",
      message: "status must be acknowledged or resolved (note: text, at most 1000 characters)",
    },
  }),
);

/** The console's alert pages (`/alerts`, its CSV): tab, filters, order, page; unknown values filter nothing. */
export const AlertsPageQuery = t.Object(
  {
    tab: t.Optional(FormText(20)),
    status: t.Optional(FormText(40)),
    severity: t.Optional(FormText(40)),
    type: t.Optional(FormText(40)),
    sort: t.Optional(FormText(40)),
    device: t.Optional(FormText(1000)),
    rule: t.Optional(FormText(20)),
    cursor: t.Optional(FormText(1000)),
    filter: t.Optional(FormText(1000)),
  },
  { additionalProperties: true },
);

/**
 * The rule form (create, edit; its GET pages take the same fields as a query to start from). `enabled`
 * is a hidden "false" followed by the checkbox's "true": its last value counts.
 */
export const RuleForm = ConsoleForm({
  name: t.Optional(FormText(1000)),
  product_name: t.Optional(FormText(1000)),
  condition_field: t.Optional(FormText(1000)),
  operator: t.Optional(FormText(40)),
  threshold_value: t.Optional(FormText(1000)),
  clear_threshold: t.Optional(FormText(1000)),
  for_minutes: t.Optional(FormText(40)),
  resolve_after_minutes: t.Optional(FormText(40)),
  severity: t.Optional(FormText(40)),
  enabled: t.Optional(FormList(10)),
  scope_type: t.Optional(FormText(40)),
  device_ids: t.Optional(FormText(100_000)),
  scope_view: t.Optional(FormText(1000)),
  scope_query: t.Optional(FormText(2000)),
  recipients: t.Optional(FormText(10_000)),
});
export type RuleForm = Static<typeof RuleForm>;

/** Acknowledge or resolve the alerts chosen (checkboxes), with a note; `back` is the page to return to. */
export const AlertBulkForm = ConsoleForm({
  ids: t.Optional(FormList(100)),
  action: t.Optional(FormText(20)),
  note: t.Optional(FormText(10_000)),
  back: t.Optional(FormText(2000)),
});

export const RuleParams = t.Object({ id: t.String({ description: "The rule's id" }) });

/** Delete a rule; a new webhook secret; a test notification: buttons. */
export const AlertButtonForm = ButtonForm;
