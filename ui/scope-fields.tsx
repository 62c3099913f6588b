// The scope choice of alert rules and reports (docs/fleet.md, _Scopes_): which devices, as one select
// and the one input its choice needs (the others are hidden by CSS `:has()`, no script; without it
// they all show, each labelled). Plain values in; the feature checks what comes back.
import { FieldError } from "./components";
import { QueryErrorNote, QuerySyntax } from "./query-help";

export interface ScopeFieldValues {
  scope_type: string;
  device_ids: string;
  /** A saved view's id. */
  scope_view: string;
  scope_query: string;
}

export interface ScopeFieldsProps {
  values: ScopeFieldValues;
  /** The choices, value → label (the feature's SCOPE_LABELS, in its order). */
  types: { value: string; label: string }[];
  views: { id: string; name: string }[];
  errors: Partial<Record<keyof ScopeFieldValues, string | undefined>>;
  /** A query that does not parse: the note with the caret under its bad token replaces the field's error. */
  queryError?: { message: string; position: number } | undefined;
  disabled?: boolean;
}

export function ScopeFields({ values, types, views, errors, queryError, disabled }: ScopeFieldsProps) {
  return (
    <fieldset class="scope-fields" data-scope={values.scope_type}>
      <legend>Devices</legend>
      <label>
        <span>Scope</span>
        <select name="scope_type" disabled={disabled} aria-invalid={errors.scope_type ? "true" : undefined}>
          {types.map((t) => (
            <option value={t.value} selected={t.value === values.scope_type} safe>
              {t.label}
            </option>
          ))}
        </select>
        <FieldError message={errors.scope_type} />
      </label>
      <label class="scope-devices">
        <span>Device ids</span>
        <input
          type="text"
          name="device_ids"
          value={values.device_ids}
          maxlength="20000"
          placeholder="Device ids, comma-separated"
          disabled={disabled}
          aria-invalid={errors.device_ids ? "true" : undefined}
        />
        <FieldError message={errors.device_ids} />
      </label>
      <label class="scope-view">
        <span>Saved view</span>
        <select name="scope_view" disabled={disabled} aria-invalid={errors.scope_view ? "true" : undefined}>
          <option value="">
            {views.length === 0 ? "No saved views yet (Devices → Save as view)" : "Choose a view"}
          </option>
          {views.map((v) => (
            <option value={v.id} selected={v.id === values.scope_view} safe>
              {v.name}
            </option>
          ))}
        </select>
        <span class="help">A dynamic group: whoever matches the view's query when telemetry is read.</span>
        <FieldError message={errors.scope_view} />
      </label>
      <div class="scope-query">
        <label>
          <span>Fleet query</span>
          <input
            type="text"
            name="scope_query"
            value={values.scope_query}
            maxlength="1000"
            placeholder="tag:site=berlin -tag:env=lab"
            list="scope-query-keys"
            autocomplete="off"
            disabled={disabled}
            aria-invalid={errors.scope_query ? "true" : undefined}
          />
          {queryError && errors.scope_query ? "" : <FieldError message={errors.scope_query} />}
        </label>
        {queryError && errors.scope_query ? (
          <QueryErrorNote query={values.scope_query.trim()} error={queryError} />
        ) : (
          ""
        )}
        <datalist id="scope-query-keys">
          {["tag:", "status:online", "status:offline", "approval:approved", "product:", "last_seen:<1h"].map(
            (k) => (
              <option value={k}></option>
            ),
          )}
        </datalist>
        <QuerySyntax id="scope-query-help" card={false} />
      </div>
    </fieldset>
  );
}
