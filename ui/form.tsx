import type { Children } from "@kitajs/html";
import { FieldError } from "./components";

interface FieldBase {
  name: string;
  label: string;
  value: string;
  error?: string | undefined;
  help?: string;
}

/** What an input may carry besides its name and value (script hooks go in `data`, as `data-*`). */
export interface InputOptions {
  placeholder?: string;
  autocomplete?: string;
  autofocus?: boolean;
  required?: boolean;
  disabled?: boolean;
  inputmode?: "numeric" | "text" | "email";
  pattern?: string;
  minLength?: number;
  spellcheck?: boolean;
  class?: string;
  id?: string;
  /** The form it belongs to when outside it (a table's row checkbox). */
  form?: string;
  /** For an input without a visible label. */
  ariaLabel?: string;
  /** The id of the text that describes it (TextField's help line gets `<id>-help`). */
  describedBy?: string;
  data?: Record<string, string | true>;
}

type TextType = "text" | "email" | "url" | "password" | "search" | "datetime-local";

function dataAttributes(data: InputOptions["data"]): Record<string, string | boolean> {
  return Object.fromEntries(Object.entries(data ?? {}).map(([key, value]) => [`data-${key}`, value]));
}

/**
 * A text-like input without its label (inline forms, filter bars): the one place inputs get their
 * attributes, `aria-invalid` when `error` is set. TextField wraps it in its label.
 */
export function TextInput(
  props: InputOptions & {
    name: string;
    value: string;
    type?: TextType;
    maxLength?: number;
    error?: string | undefined;
  },
) {
  return (
    <input
      type={props.type ?? "text"}
      id={props.id}
      name={props.name}
      value={props.value}
      class={props.class}
      form={props.form}
      maxlength={props.maxLength === undefined ? undefined : String(props.maxLength)}
      minlength={props.minLength === undefined ? undefined : String(props.minLength)}
      required={props.required}
      disabled={props.disabled}
      autofocus={props.autofocus}
      placeholder={props.placeholder}
      autocomplete={props.autocomplete}
      inputmode={props.inputmode}
      pattern={props.pattern}
      spellcheck={props.spellcheck === undefined ? undefined : String(props.spellcheck)}
      aria-label={props.ariaLabel}
      aria-describedby={props.describedBy}
      aria-invalid={props.error ? "true" : undefined}
      {...dataAttributes(props.data)}
    />
  );
}

/** What ends a labelled field: its help line (`helpId`: what the input's aria-describedby names), its error. */
function FieldFoot(props: { help?: string; helpId?: string; error?: string }) {
  return (
    <>
      {props.help ? (
        <span class="help" id={props.helpId} safe>
          {props.help}
        </span>
      ) : (
        ""
      )}
      <FieldError message={props.error} />
    </>
  );
}

/** A labelled text-like input (text, email, url, password, search, a UTC time) with its help line and error. */
export function TextField(
  props: FieldBase &
    Omit<InputOptions, "ariaLabel"> & { type?: TextType; maxLength?: number; labelStyle?: string },
) {
  const { label, help, labelStyle, ...input } = props;
  // With an id, the help line is the input's description for screen readers.
  const helpId = help && props.id ? `${props.id}-help` : undefined;
  return (
    <label style={labelStyle}>
      <span safe>{label}</span>
      <TextInput {...input} describedBy={helpId} />
      <FieldFoot help={help} helpId={helpId} error={props.error} />
    </label>
  );
}

/** A labelled multi-line input (a script, notes) with its error; `code` for a script (monospace, no spellcheck). */
export function TextAreaField(
  props: FieldBase & { rows: number; code?: boolean; required?: boolean; maxLength?: number },
) {
  return (
    <label>
      <span safe>{props.label}</span>
      <textarea
        name={props.name}
        rows={String(props.rows)}
        class={props.code ? "mono" : undefined}
        spellcheck={props.code ? "false" : undefined}
        maxlength={props.maxLength === undefined ? undefined : String(props.maxLength)}
        required={props.required}
        aria-invalid={props.error ? "true" : undefined}
        safe
      >
        {props.value}
      </textarea>
      <FieldFoot help={props.help} error={props.error} />
    </label>
  );
}

/** A file to upload (the form must be `multipart/form-data`). */
export function FileField(props: { name: string; label: string; accept?: string }) {
  return (
    <label>
      <span safe>{props.label}</span>
      <input type="file" name={props.name} accept={props.accept} />
    </label>
  );
}

/** A value the form carries back as it was given (the page's state, the record it acts on). */
export function Hidden(props: { name: string; value: string }) {
  return <input type="hidden" name={props.name} value={props.value} />;
}

type CheckboxProps = Pick<InputOptions, "form" | "ariaLabel" | "disabled" | "data"> & {
  name?: string;
  value?: string;
  checked?: boolean;
};

function CheckboxInput(props: CheckboxProps) {
  return (
    <input
      type="checkbox"
      name={props.name}
      value={props.value}
      checked={props.checked}
      disabled={props.disabled}
      form={props.form}
      aria-label={props.ariaLabel}
      {...dataAttributes(props.data)}
    />
  );
}

/** A checkbox without a visible label (a table row's): `ariaLabel` names it. Posts `value` when checked. */
export function Checkbox(props: CheckboxProps) {
  return <CheckboxInput {...props} />;
}

/** A checkbox in its label (class `checkbox`): the children are the label's text. */
export function CheckboxField(props: CheckboxProps & { children: Children }) {
  const { children: _, ...box } = props;
  return (
    <label class="checkbox">
      <CheckboxInput {...box} />
      {props.children}
    </label>
  );
}

/**
 * A whole-number input with its unit; `min`/`max` come from the constant that enforces them. `optional`:
 * it may be left empty (the help line says what empty means).
 */
export function NumberField(
  props: FieldBase & { min: number; max: number; unit?: string; optional?: boolean; disabled?: boolean },
) {
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: its NumberInput is there, inside its unit's span when it has one
    <label>
      <span safe>{props.label}</span>
      {props.unit === undefined ? (
        <NumberInput {...props} />
      ) : (
        <span class="input-unit">
          <NumberInput {...props} />
          <span class="muted" safe>
            {props.unit}
          </span>
        </span>
      )}
      <FieldFoot help={props.help} error={props.error} />
    </label>
  );
}

/** NumberField's input, without the label (a table cell's, named by `ariaLabel`). */
export function NumberInput(
  props: Pick<FieldBase, "name" | "value" | "error"> & {
    min: number;
    max: number;
    optional?: boolean;
    disabled?: boolean;
    ariaLabel?: string;
  },
) {
  return (
    <input
      type="number"
      name={props.name}
      value={props.value}
      min={String(props.min)}
      max={String(props.max)}
      step="1"
      required={!props.optional}
      disabled={props.disabled}
      inputmode="numeric"
      aria-label={props.ariaLabel}
      aria-invalid={props.error ? "true" : undefined}
    />
  );
}

/** A select's option: a value and the label it shows (a plain string is both). */
export type SelectOption = string | { value: string; label: string };

/**
 * A labelled select with its error. `prompt`: a first, empty choice ("Any", "Select a field first");
 * `labelStyle` sizes it in inline forms; `attributes` go on the select (a script's hook, htmx's).
 */
export function SelectField(props: {
  name: string;
  label: string;
  options: readonly SelectOption[];
  value: string | undefined;
  prompt?: string;
  error?: string | undefined;
  disabled?: boolean;
  labelStyle?: string;
  title?: string;
  attributes?: Record<string, string | true>;
}) {
  return (
    <label style={props.labelStyle} title={props.title}>
      <span safe>{props.label}</span>
      <select
        name={props.name}
        disabled={props.disabled}
        aria-invalid={props.error ? "true" : undefined}
        {...props.attributes}
      >
        {props.prompt === undefined ? (
          ""
        ) : (
          <option value="" safe>
            {props.prompt}
          </option>
        )}
        {props.options.map((option) => {
          const { value, label } = typeof option === "string" ? { value: option, label: option } : option;
          return (
            <option value={value} selected={value === props.value} safe>
              {label}
            </option>
          );
        })}
      </select>
      <FieldError message={props.error} />
    </label>
  );
}

/** A secret shown once (a new token or password), with a copy button. */
export function OneTimeSecret(props: { id: string; headline: string; advice: string; secret: string }) {
  return (
    <div class="flash success" role="status">
      <div>
        <strong safe>{props.headline}</strong> <span safe>{props.advice}</span>
        <div class="secret" id={props.id} safe>
          {props.secret}
        </div>
        <button type="button" class="btn small" data-copy={props.id}>
          Copy
        </button>
      </div>
    </div>
  );
}

/** Beside an install line: a warning when it would fail on this server, and help for a private CA. */
export function InstallAdviceNotes(props: { missingBuilds?: string; privateCa?: string }) {
  return (
    <>
      {props.missingBuilds ? (
        <p class="flash warn" role="status" id="agent-builds-missing" safe>
          {props.missingBuilds}
        </p>
      ) : (
        ""
      )}
      {props.privateCa ? (
        <p class="help" id="install-private-ca" safe>
          {props.privateCa}
        </p>
      ) : (
        ""
      )}
    </>
  );
}
