import { assetUrl } from "../../../ui/assets";
import { CsrfField, FieldError, PageHead } from "../../../ui/components";
import { CheckboxField, Hidden, NumberField, SelectField, TextField } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { ScopeFields } from "../../../ui/scope-fields";
import { Card } from "../../../ui/table";
import type { SchemaOption } from "../../builder/service";
import { queryProblem, SCOPE_LABELS, SCOPE_TYPES } from "../../fleet/service";
import { operatorsFor, SEVERITIES } from "../model";
import { LIMITS, type RuleErrors } from "../validation";

/** The form's values as text (what was typed or stored). */
export type RuleFormValues = Record<
  | "name"
  | "product_name"
  | "condition_field"
  | "operator"
  | "threshold_value"
  | "clear_threshold"
  | "for_minutes"
  | "resolve_after_minutes"
  | "severity"
  | "enabled"
  | "scope_type"
  | "device_ids"
  | "scope_view"
  | "scope_query"
  | "recipients",
  string
>;

export interface RuleFormProps {
  mode: "create" | "edit";
  ruleId?: number;
  values: RuleFormValues;
  errors: RuleErrors;
  /** The form-level message (reference: "Unable to save rule. Correct the highlighted fields."). */
  formError?: string;
  /** Informational messages (schema has no fields, the field left the schema, ...). */
  notices: string[];
  /** The products approved devices announce schemas for. */
  products: string[];
  options: SchemaOption[];
  /** The edited rule's product, field and the type it was saved with. */
  savedField?: { product: string; key: string; type: string };
  /** Set when editing is blocked (deprecated rule): every input disabled. */
  blocked?: string;
  /** The saved views a view scope may choose. */
  views: { id: string; name: string }[];
}

export function RuleFormPage({ ctx, props }: { ctx: PageContext; props: RuleFormProps }) {
  const v = props.values;
  const e = props.errors;
  const disabled = Boolean(props.blocked);
  const option = props.options.find((o) => o.key === v.condition_field);
  // A rule already on a field the devices now disagree on keeps the type it was saved with.
  const saved = props.savedField;
  const kept = option?.conflict && saved?.key === option.key && saved.product === v.product_name;
  const type = kept ? saved.type : option?.value_type;
  const operators = type ? operatorsFor(type) : [];
  const numeric = type === "number" || type === "integer";
  const self = props.mode === "create" ? "/alerts/new" : `/alerts/${props.ruleId}/edit`;
  const refresh = {
    "hx-get": self,
    "hx-include": "#rule-form",
    "hx-target": "#rule-form",
    "hx-select": "#rule-form",
    "hx-swap": "outerHTML",
  };
  return (
    <Layout ctx={ctx} title={props.mode === "create" ? "Add Rule" : "Edit Rule"}>
      <script src={assetUrl("alert-rule-form.js")} defer></script>
      <PageHead
        title={props.mode === "create" ? "Add Rule" : "Edit Rule"}
        subtitle="Configure schema-driven conditions for alert generation."
      />
      <Card title="Rule">
        <form
          method="post"
          id="rule-form"
          action={props.mode === "create" ? "/alerts/rules" : `/alerts/rules/${props.ruleId}`}
          class="stacked wide"
          data-mode={props.mode}
          data-blocked={disabled ? "true" : "false"}
          novalidate
        >
          <CsrfField token={ctx.csrfToken} />
          {props.blocked ? (
            <div class="flash error" role="alert" safe>
              {props.blocked}
            </div>
          ) : (
            ""
          )}
          {props.formError ? (
            <div class="flash error" role="alert" safe>
              {props.formError}
            </div>
          ) : (
            ""
          )}
          {props.notices.map((n) => (
            <div class="flash info" role="status" safe>
              {n}
            </div>
          ))}
          <div class="form-grid two-col">
            <TextField
              name="name"
              label="Rule Name"
              value={v.name}
              maxLength={LIMITS.name}
              placeholder="e.g. High temperature"
              disabled={disabled || props.mode === "edit"}
              error={e.name}
            />
            <SelectField
              name="product_name"
              label="Schema Product"
              title="Select the schema context used for condition validation."
              prompt="Select product/schema"
              value={v.product_name}
              options={props.products}
              error={e.product_name}
              disabled={disabled}
              attributes={refresh}
            />
            <SelectField
              name="condition_field"
              label="Schema Field"
              prompt="Select schema field"
              value={v.condition_field}
              options={props.options.map((o) => ({
                value: o.key,
                label: `${o.label} (${o.conflict ? "type conflict" : o.value_type})`,
              }))}
              error={e.condition_field}
              disabled={disabled}
              attributes={refresh}
            />
            <SelectField
              name="operator"
              label="Operator"
              prompt={option ? "Select operator" : "Select a field first"}
              value={v.operator}
              options={operators}
              error={e.operator}
              disabled={disabled}
            />
            <TextField
              name="threshold_value"
              label="Threshold"
              value={v.threshold_value}
              maxLength={LIMITS.threshold}
              placeholder={numeric ? "e.g. 50" : "e.g. ok42"}
              disabled={disabled}
              error={e.threshold_value}
            />
            <NumberField
              name="for_minutes"
              label="For (minutes)"
              value={v.for_minutes}
              min={0}
              max={10080}
              optional
              disabled={disabled}
              help="The condition must hold this long before an alert opens; 0 = at once."
              error={e.for_minutes}
            />
            <NumberField
              name="resolve_after_minutes"
              label="Auto-resolve after (minutes)"
              value={v.resolve_after_minutes}
              min={0}
              max={10080}
              optional
              disabled={disabled}
              help="Resolve once the condition has not held this long. Empty = resolve by hand."
              error={e.resolve_after_minutes}
            />
            <TextField
              name="clear_threshold"
              label="Clear threshold (optional)"
              value={v.clear_threshold}
              maxLength={100}
              disabled={disabled}
              help="Hysteresis for number fields: recovered only past this value."
              error={e.clear_threshold}
            />
            <SelectField
              name="severity"
              label="Severity"
              prompt="Select severity"
              value={v.severity}
              options={SEVERITIES}
              error={e.severity}
              disabled={disabled}
            />
            <TextField
              name="recipients"
              label="Extra email recipients (optional)"
              value={v.recipients}
              maxLength={5000}
              placeholder="a@example.com, b@example.com"
              disabled={disabled}
              error={e.recipients}
            />
            <div>
              <Hidden name="enabled" value="false" />
              <CheckboxField name="enabled" value="true" checked={v.enabled !== "false"} disabled={disabled}>
                <span>Enabled</span>
              </CheckboxField>
              <FieldError message={e.enabled} />
            </div>
          </div>
          <ScopeFields
            values={v}
            types={SCOPE_TYPES.map((t) => ({ value: t, label: SCOPE_LABELS[t] }))}
            views={props.views}
            errors={e}
            queryError={e.scope_query ? queryProblem(v.scope_query) : undefined}
            disabled={disabled}
          />
          <p class="muted small">
            The product picks the field; the scope picks the devices (any product's, when they report the
            field). Tip: Ctrl/Cmd + Enter to save.
          </p>
          <div class="actions">
            <button class="btn primary" type="submit" disabled={disabled}>
              {props.mode === "create" ? "Create Rule" : "Save Changes"}
            </button>
            <a class="btn" href="/alerts?tab=rules" data-discard>
              Cancel
            </a>
          </div>
        </form>
      </Card>
      <dialog id="discard-dialog" aria-labelledby="discard-title">
        <h2 id="discard-title">Discard Changes?</h2>
        <p>You have unsaved edits. Do you want to discard them?</p>
        <div class="actions">
          <button class="btn" type="button" data-keep-editing>
            Keep Editing
          </button>
          <button class="btn danger" type="button" data-discard-confirm>
            Discard
          </button>
        </div>
      </dialog>
    </Layout>
  );
}
