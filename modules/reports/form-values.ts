/** The report form's fields ↔ a definition (ReportInput), and validation errors back onto the form. */
import { REPORT_FORM_ROWS, type Report, type ReportForm, scopeOf } from "./model";
import type { ReportFormValues } from "./pages/form";

/** The form's value for a report's product ("__all__": every product). */
export function schemaValue(schemaId: string | null): string {
  return schemaId === null ? "__all__" : encodeURIComponent(schemaId);
}

export function parseSchemaValue(value: string): string | null {
  // "product/version" is how older pages named a schema: the product is what counts.
  const [id] = value.split("/");
  if (value === "__all__" || !id) return null;
  try {
    return decodeURIComponent(id);
  } catch {
    return null;
  }
}

export function formValues(form: ReportForm): ReportFormValues {
  const get = (name: keyof ReportForm) => form[name] ?? "";
  const has = (name: keyof ReportForm) => form[name] !== undefined;
  const fields: ReportFormValues["fields"] = [];
  const filters: ReportFormValues["filters"] = [];
  for (let i = 0; i < REPORT_FORM_ROWS; i++) {
    if (has(`field_path_${i}`)) fields.push({ path: get(`field_path_${i}`), alias: get(`field_alias_${i}`) });
    if (has(`filter_target_${i}`))
      filters.push({
        target: get(`filter_target_${i}`),
        operator: get(`filter_operator_${i}`),
        value: get(`filter_value_${i}`),
      });
  }
  return {
    name: get("name"),
    schema: get("schema") || "__all__",
    // Blank rows are the form's spare rows, not part of the report.
    fields: fields.filter((f) => f.path !== ""),
    filters: filters.filter((f) => f.target !== ""),
    range: get("range") || "24h",
    from: get("from"),
    to: get("to"),
    mode: get("mode") || "raw",
    bucket: get("bucket") || "1h",
    scope: {
      scope_type: get("scope_type") || (get("schema") && get("schema") !== "__all__" ? "product" : "fleet"),
      device_ids: get("device_ids"),
      scope_view: get("scope_view"),
      scope_query: get("scope_query"),
    },
  };
}

export function reportValues(report: Report): ReportFormValues {
  const c = report.config;
  return {
    name: report.name,
    schema: schemaValue(c.schema_id),
    fields: c.fields.map((f) => ({ path: f.path, alias: f.alias === f.path ? "" : f.alias })),
    filters: c.filters.map((f) => ({
      target: f.field ? `column:${f.field}` : `path:${f.path}`,
      operator: f.operator,
      value: String(f.value),
    })),
    range: c.range.preset,
    from: c.range.from ?? "",
    to: c.range.to ?? "",
    mode: c.mode,
    bucket: c.bucket,
    scope: {
      scope_type: scopeOf(c).type,
      device_ids: (scopeOf(c).device_ids ?? []).join(", "),
      scope_view: scopeOf(c).view ?? "",
      scope_query: scopeOf(c).query ?? "",
    },
  };
}

/** The API-shaped definition of a form (validated by definitions.validateReport like any other). */
export function formInput(values: ReportFormValues) {
  return {
    name: values.name,
    config: {
      schema_id: parseSchemaValue(values.schema),
      fields: values.fields.map((f) => ({ path: f.path, alias: f.alias })),
      filters: values.filters.map((f) => {
        const [kind, ...rest] = f.target.split(":");
        const target = rest.join(":");
        return kind === "column"
          ? { field: target, operator: f.operator, value: f.value }
          : { path: target, operator: f.operator, value: f.value };
      }),
      range:
        values.range === "custom"
          ? { preset: values.range, from: values.from, to: values.to }
          : { preset: values.range },
      mode: values.mode,
      bucket: values.bucket,
      scope: formScope(values.scope),
    },
  };
}

/** The scope as the API takes it: only the part its type uses (the form sends every input). */
function formScope(scope: ReportFormValues["scope"]) {
  const type = scope.scope_type;
  if (type === "devices") return { type, device_ids: scope.device_ids.split(/[\s,]+/).filter(Boolean) };
  if (type === "view") return { type, view: scope.scope_view };
  if (type === "query") return { type, query: scope.scope_query };
  return { type };
}

/** Validation errors (`fields.0.path`, `config.filters.1.value`…) under the form's input names. */
export function formErrors(errors: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, message] of Object.entries(errors)) {
    const k = key.replace(/^config\./, "");
    let m = /^fields\.(\d+)\.(path|alias)$/.exec(k);
    if (m) {
      out[`field_${m[2]}_${m[1]}`] ??= message;
      continue;
    }
    m = /^filters\.(\d+)\.(\w+)/.exec(k);
    if (m) {
      const part = m[2] === "value" ? "value" : m[2] === "operator" ? "operator" : "target";
      out[`filter_${part}_${m[1]}`] ??= message;
      continue;
    }
    m = /^scope\.(type|view|query|device_ids)$/.exec(k);
    if (m) {
      out[m[1] === "device_ids" ? "device_ids" : `scope_${m[1]}`] ??= message;
      continue;
    }
    if (k.startsWith("fields")) out.field_path_0 ??= message;
    else if (k.startsWith("schema")) out.schema ??= message;
    else if (k.startsWith("range") || k === "mode" || k === "bucket") out.range ??= message;
    else out.name ??= message;
  }
  return out;
}
