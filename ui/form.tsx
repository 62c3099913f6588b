import { FieldError } from "./components";

interface FieldBase {
  name: string;
  label: string;
  value: string;
  error?: string | undefined;
  help?: string;
}

/** A labelled text-like input (text, email, url, password) with its help line and error. */
export function TextField(
  props: FieldBase & {
    type?: "text" | "email" | "url" | "password";
    maxLength: number;
    required?: boolean;
    placeholder?: string;
    autocomplete?: string;
  },
) {
  return (
    <label>
      <span safe>{props.label}</span>
      <input
        type={props.type ?? "text"}
        name={props.name}
        value={props.value}
        maxlength={String(props.maxLength)}
        required={props.required}
        placeholder={props.placeholder}
        autocomplete={props.autocomplete}
        aria-invalid={props.error ? "true" : undefined}
      />
      {props.help ? (
        <span class="help" safe>
          {props.help}
        </span>
      ) : (
        ""
      )}
      <FieldError message={props.error} />
    </label>
  );
}

/**
 * A whole-number input with its unit; `min`/`max` come from the constant that enforces them. `optional`:
 * it may be left empty (the help line says what empty means).
 */
export function NumberField(
  props: FieldBase & { min: number; max: number; unit: string; optional?: boolean },
) {
  return (
    <label>
      <span safe>{props.label}</span>
      <span class="input-unit">
        <input
          type="number"
          name={props.name}
          value={props.value}
          min={String(props.min)}
          max={String(props.max)}
          step="1"
          required={!props.optional}
          inputmode="numeric"
          aria-invalid={props.error ? "true" : undefined}
        />
        <span class="muted" safe>
          {props.unit}
        </span>
      </span>
      {props.help ? (
        <span class="help" safe>
          {props.help}
        </span>
      ) : (
        ""
      )}
      <FieldError message={props.error} />
    </label>
  );
}

/** A select among fixed options (value shown as its label). `compact` keeps it narrow in inline forms. */
export function SelectField(props: {
  name: string;
  label: string;
  options: readonly string[];
  value: string;
  compact?: boolean;
}) {
  return (
    <label style={props.compact ? "flex: 0 1 160px" : undefined}>
      <span safe>{props.label}</span>
      <select name={props.name}>
        {props.options.map((option) => (
          <option value={option} selected={option === props.value} safe>
            {option}
          </option>
        ))}
      </select>
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
