import { CsrfField, PageHead } from "../../../ui/components";
import { SelectField, TextField } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { ScopeFields, type ScopeFieldValues } from "../../../ui/scope-fields";
import { describeConflict, type SchemaOption } from "../../builder/service";
import { queryProblem, SCOPE_LABELS, SCOPE_TYPES } from "../../fleet/service";
import { BUCKETS, FILTER_COLUMNS, FILTER_OPERATORS, MODES, RANGE_PRESETS, REPORT_LIMITS } from "../model";

/** The form as typed (strings), so a rejected form comes back exactly as it was sent. */
export interface ReportFormValues {
  name: string;
  /** `__all__` or `<product>/<version>` (each URI-encoded). */
  schema: string;
  fields: { path: string; alias: string }[];
  /** target: `column:<name>` or `path:<option key>`. */
  filters: { target: string; operator: string; value: string }[];
  range: string;
  from: string;
  to: string;
  mode: string;
  bucket: string;
  /** Which devices (ui/scope-fields.tsx): scope_type, device_ids, scope_view (an id), scope_query. */
  scope: ScopeFieldValues;
}

export interface ReportFormProps {
  title: "New Report" | "Edit Report";
  action: string;
  values: ReportFormValues;
  schemas: { value: string; label: string }[];
  options: SchemaOption[];
  optionsProblem?: string | undefined;
  /** Keyed like the form's names: name, schema, field_path_0, filter_value_1, range… */
  errors: Record<string, string>;
  summary?: string | undefined;
  /** The saved views a view scope may choose. */
  views: { id: string; name: string }[];
}

export const MODE_LABELS: Record<string, string> = {
  raw: "Raw rows",
  per_device: "Per device",
  buckets: "Time buckets",
};
const RANGE_LABELS: Record<string, string> = {
  "1h": "Last hour",
  "24h": "Last 24 h",
  "7d": "Last 7 days",
  "30d": "Last 30 days",
  custom: "Custom (UTC)",
};
const OP_LABELS: Record<string, string> = { contains: "contains", not_contains: "doesn't contain" };

/** A field as the dropdowns name it; a conflicting one says which types its devices declare. */
const optionLabel = (o: SchemaOption) =>
  `${o.label} (${o.key}, ${o.conflict ? `type conflict: ${describeConflict(o.conflict)}` : o.value_type})`;

/** Create/edit a report (reference §6.3 form): columns and filters from the schema's report options. */
export function ReportFormPage({ ctx, props }: { ctx: PageContext; props: ReportFormProps }) {
  const { values, errors } = props;
  const fieldOptions = [
    { value: "", label: "— none —" },
    ...props.options.map((o) => ({ value: o.key, label: optionLabel(o) })),
  ];
  const targets = [
    { value: "", label: "— none —" },
    ...FILTER_COLUMNS.map((c) => ({ value: `column:${c}`, label: `Telemetry column ${c}` })),
    ...props.options.map((o) => ({
      value: `path:${o.key}`,
      label: optionLabel(o),
    })),
  ];
  const operators = FILTER_OPERATORS.map((o) => ({ value: o, label: OP_LABELS[o] ?? o }));
  // Blank rows to fill in: at least one column row is always present (reference).
  const fields = [
    ...values.fields,
    ...Array.from({ length: values.fields.length ? 2 : 3 }, () => ({ path: "", alias: "" })),
  ];
  const filters = [
    ...values.filters,
    ...Array.from({ length: 2 }, () => ({ target: "", operator: "=", value: "" })),
  ];
  return (
    <Layout ctx={ctx} title={props.title}>
      <PageHead title={props.title}>
        <a class="btn" href="/reports">
          Back to List
        </a>
      </PageHead>
      {props.summary ? (
        <div class="flash error" role="alert" id="form-summary" safe>
          {props.summary}
        </div>
      ) : (
        ""
      )}
      <form method="post" action={props.action} class="stack" id="report-form">
        <CsrfField token={ctx.csrfToken} />
        <section class="card form-grid two-col">
          <TextField
            name="name"
            label="Report Name"
            value={values.name}
            maxLength={REPORT_LIMITS.nameMax}
            required
            error={errors.name}
          />
          <div>
            <SelectField
              name="schema"
              label="Schema (product and version)"
              value={values.schema}
              options={[{ value: "__all__", label: "All schemas" }, ...props.schemas]}
              error={errors.schema}
            />
            <button class="btn small" type="submit" name="reload" value="1">
              Load this schema's fields
            </button>
            {props.optionsProblem ? (
              <p class="field-error" role="alert" safe>
                {props.optionsProblem}
              </p>
            ) : (
              ""
            )}
          </div>
        </section>
        <section class="card">
          <ScopeFields
            values={values.scope}
            types={SCOPE_TYPES.map((t) => ({ value: t, label: SCOPE_LABELS[t] }))}
            views={props.views}
            errors={errors}
            queryError={errors.scope_query ? queryProblem(values.scope.scope_query) : undefined}
          />
          <p class="muted small">
            The schema picks the fields; the scope picks whose telemetry is read (a view: its members when the
            report is read).
          </p>
        </section>
        <section class="card">
          <h2>Columns</h2>
          <div class="stack">
            {fields.map((f, i) => (
              <div class="form-grid two-col" data-row="field">
                <SelectField
                  name={`field_path_${i}`}
                  label={`Field ${i + 1}`}
                  value={f.path}
                  options={fieldOptions}
                  error={errors[`field_path_${i}`]}
                />
                <TextField
                  name={`field_alias_${i}`}
                  label="Column title"
                  value={f.alias}
                  maxLength={REPORT_LIMITS.aliasMax}
                  placeholder="Defaults to the field path"
                  error={errors[`field_alias_${i}`]}
                />
              </div>
            ))}
          </div>
        </section>
        <section class="card">
          <h2>Filters</h2>
          <p class="muted small">
            Numbers compare as numbers; text compares case-insensitively. Times are ISO 8601 UTC.
          </p>
          <div class="stack">
            {filters.map((f, i) => (
              <div class="form-grid" style="grid-template-columns: 2fr 1fr 2fr" data-row="filter">
                <SelectField
                  name={`filter_target_${i}`}
                  label={`Filter ${i + 1}`}
                  value={f.target}
                  options={targets}
                  error={errors[`filter_target_${i}`]}
                />
                <SelectField
                  name={`filter_operator_${i}`}
                  label="Operator"
                  value={f.operator}
                  options={operators}
                  error={errors[`filter_operator_${i}`]}
                />
                <TextField
                  name={`filter_value_${i}`}
                  label="Value"
                  value={f.value}
                  maxLength={REPORT_LIMITS.valueMax}
                  error={errors[`filter_value_${i}`]}
                />
              </div>
            ))}
          </div>
        </section>
        <section class="card form-grid two-col">
          <SelectField
            name="range"
            label="Time range"
            value={values.range}
            options={RANGE_PRESETS.map((r) => ({ value: r, label: RANGE_LABELS[r]! }))}
            error={errors.range}
          />
          <div class="form-grid two-col">
            <TextField
              name="from"
              label="From (custom, UTC)"
              value={values.from}
              placeholder="2026-01-31T00:00:00Z"
              maxLength={40}
            />
            <TextField
              name="to"
              label="To (custom, UTC)"
              value={values.to}
              placeholder="2026-02-01T00:00:00Z"
              maxLength={40}
            />
          </div>
          <SelectField
            name="mode"
            label="Default view"
            value={values.mode}
            options={MODES.map((m) => ({ value: m, label: MODE_LABELS[m]! }))}
          />
          <SelectField
            name="bucket"
            label="Bucket size (time buckets)"
            value={values.bucket}
            options={BUCKETS.map((b) => ({ value: b, label: b }))}
          />
        </section>
        <div class="actions">
          <a class="btn" href="/reports">
            Cancel
          </a>
          <button class="btn primary" type="submit">
            Save
          </button>
        </div>
      </form>
    </Layout>
  );
}
