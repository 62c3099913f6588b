// The rules of `key=value` labels, shared by the agent (its `labels:` setting), the device API (the
// labels a registration declares) and the console (operators' tags): one definition, so a label the
// agent accepts is never refused by the server.

/** Lower-case letters and digits first, then also `.`, `_`, `/`, `-`: at most 63 characters. */
export const LABEL_KEY_PATTERN = "^[a-z0-9][a-z0-9._/-]{0,62}$";
/** Printable ASCII without space at the ends, at most 128 characters (may be empty). */
export const LABEL_VALUE_MAX = 128;
/** Longest `key=value` as typed into a form: a 63-character key, `=`, a value. */
export const LABEL_TEXT_MAX = 64 + LABEL_VALUE_MAX;
/** Most labels one device declares, and most tags operators set on one device. */
export const LABELS_PER_DEVICE_MAX = 64;

const KEY = new RegExp(LABEL_KEY_PATTERN);
// Printable ASCII (space included inside), so a value is easy to type into a query and to show.
const VALUE = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/;

/** Why this key is not valid, or undefined when it is. */
export function labelKeyProblem(key: string): string | undefined {
  return KEY.test(key)
    ? undefined
    : "must be 1 to 63 characters: lower-case letters, digits and . _ / -, starting with a letter or digit";
}

/** Why this value is not valid, or undefined when it is. */
export function labelValueProblem(value: string): string | undefined {
  if (value === "") return undefined;
  if (value.length > LABEL_VALUE_MAX) return `must be at most ${LABEL_VALUE_MAX} characters`;
  return VALUE.test(value) ? undefined : "must be printable ASCII characters, without spaces at either end";
}

/** The first problem of a set of labels (`{ key, message }`), or undefined when every label is valid. */
export function labelsProblem(labels: Record<string, unknown>): { key: string; message: string } | undefined {
  const keys = Object.keys(labels);
  if (keys.length > LABELS_PER_DEVICE_MAX)
    return { key: "", message: `at most ${LABELS_PER_DEVICE_MAX} labels` };
  for (const key of keys) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) return { key, message: `key ${JSON.stringify(key)} ${keyProblem}` };
    const value = labels[key];
    if (typeof value !== "string") return { key, message: `the value of ${key} must be a string` };
    const valueProblem = labelValueProblem(value);
    if (valueProblem) return { key, message: `the value of ${key} ${valueProblem}` };
  }
  return undefined;
}
