/**
 * Which values of a heartbeat payload are numbers a chart can draw: the one rule the console's
 * charts (./series.ts) and the rollup job (./rollup-fold.ts) share. PostgreSQL's `telemetry_number`
 * (migration 0019) reads single fields for the raw charts by the same rule (a test keeps them equal).
 */
import { scriptOutputPath, valueAt } from "./field-keys";

/**
 * A string that spells a number. Whitespace is ASCII's only, as PostgreSQL's `\s` is in the
 * cluster's C locale: JavaScript's `\s` would also accept no-break and other Unicode spaces.
 */
const NUMERIC = /^[ \t\n\r\v\f]*-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]{1,4})?[ \t\n\r\v\f]*$/;

/** Magnitudes PostgreSQL's float8 holds with room to sum: beyond them a value is not charted. */
const inChartRange = (n: number) => n === 0 || (Math.abs(n) >= 1e-300 && Math.abs(n) <= 1e300);

/** The chartable number a JSON value stands for (a number, or a string that spells one), if any. */
export function asNumber(value: unknown): number | undefined {
  const n =
    typeof value === "number"
      ? value
      : typeof value === "string" && NUMERIC.test(value)
        ? Number(value)
        : NaN;
  return inChartRange(n) ? n : undefined;
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Calls `visit` for each numeric field of a payload's script outputs, in payload order: the fields
 * of `scripts.<script>.data.output` (./field-keys.ts), one level of nested objects too
 * (`<field>.<inner>`), so `<script>.<field>` is the field's builder option key. Nothing else of a
 * script's report counts: a failed script's report has no output, and its `duration_ms` is not a
 * field of the script. Keys with dots are skipped (not addressable). `base` is the path up to the
 * field, `field` the rest.
 */
export function visitNumericFields(
  payload: unknown,
  visit: (script: string, base: string, field: string, value: number) => void,
): void {
  const scripts = isObject(payload) ? payload.scripts : undefined;
  if (!isObject(scripts)) return;
  for (const script in scripts) {
    if (script.includes(".")) continue;
    const path = scriptOutputPath(script);
    const output = valueAt(payload, path);
    if (!isObject(output)) continue;
    const base = path.join(".");
    for (const key in output) {
      if (key.includes(".")) continue;
      const value = output[key];
      const number = asNumber(value);
      if (number !== undefined) visit(script, base, key, number);
      else if (isObject(value)) {
        for (const inner in value) {
          const n = asNumber(value[inner]);
          if (n !== undefined && !inner.includes(".")) visit(script, base, `${key}.${inner}`, n);
        }
      }
    }
  }
}

export interface NumericField {
  /** Dotted path from the payload root, e.g. scripts.cpu.data.output.usage_pct. */
  path: string;
  /** The field's builder option key: script.field (e.g. cpu.usage_pct). */
  label: string;
  value: number;
}

/** The numeric fields of a payload (see visitNumericFields), in payload order. */
export function numericFields(payload: Record<string, unknown> | undefined): NumericField[] {
  const fields: NumericField[] = [];
  visitNumericFields(payload, (script, base, field, value) =>
    fields.push({ path: `${base}.${field}`, label: `${script}.${field}`, value }),
  );
  return fields;
}
