// What must never reach a log or a page: values of secret-looking keys, `api_key=` query values,
// bearer tokens and `"token": "…"` pairs inside text. Shared by the runner (logs it writes) and the
// runs page (logs it shows, whoever wrote them).

export const SECRET_KEY =
  /authorization|cookie|token|password|secret|api_?key|apikey|access_key|private_key|bearer/i;

/** `"<secret-looking key>": <string or scalar>` in JSON-like text, also when a truncation cut the value. */
const SECRET_PAIR = new RegExp(
  `("[^"\\\\]*(?:${SECRET_KEY.source})[^"\\\\]*"\\s*:\\s*)(?:"(?:[^"\\\\]|\\\\.)*(?:"|\\\\?$)|[^\\s,}\\]"]+)`,
  "gi",
);

/** Masks secrets inside free text: `api_key=` query values, `Bearer x`, and `"token": "…"` pairs. */
export function redactText(text: string): string {
  return text
    .replace(/(api_?key=)[^&\s"]+/gi, "$1[REDACTED]")
    .replace(/(bearer\s+)[^\s"',]+/gi, "$1[REDACTED]")
    .replace(SECRET_PAIR, '$1"[REDACTED]"');
}

/** Replaces the values of secret-looking keys (and secrets inside strings) with "[REDACTED]". */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 20) return "[…]";
  if (typeof value === "string") return redactText(value);
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([key, item]) => [
        key,
        SECRET_KEY.test(key) ? "[REDACTED]" : redact(item, depth + 1),
      ]),
    );
  }
  return value;
}
