import { AppError } from "./errors";

/**
 * One rule for every text that reaches the database: PostgreSQL cannot store NUL (`\u0000`) in text or
 * jsonb, nor a lone UTF-16 surrogate (`\ud800`), and used to answer such input with a 500. Requests
 * carrying either — in a path segment, a query parameter, a form field or anywhere in a JSON body (keys
 * included) — are refused at the edge with 400 `invalid_text`, naming the field; nothing is stored.
 */
export function isStorableText(text: string): boolean {
  return !text.includes("\u0000") && text.isWellFormed();
}

/**
 * `text` made storable, for what records a request rather than refusing it (the audit log of a refused
 * request): NUL and lone surrogates become U+FFFD, so the record says something was there.
 */
export function storableText(text: string): string {
  return isStorableText(text) ? text : text.toWellFormed().replaceAll("\u0000", "\ufffd");
}

/** `value` with every string in it (keys included) made storable; other values as they are. */
export function storableValue<T>(value: T): T {
  if (typeof value === "string") return storableText(value) as T;
  if (Array.isArray(value)) return value.map(storableValue) as T;
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [storableText(key), storableValue(item)]),
  ) as T;
}

/**
 * The only JSON escapes that can put NUL or a lone surrogate into a parsed value: `\u0000` and
 * `\uD800`–`\uDFFF`. Unescaped, neither can be in parsed JSON text: JSON forbids raw control
 * characters in strings, and text decoded from UTF-8 (with replacement) holds no lone surrogate.
 */
const UNSTORABLE_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;
/** Values parsed from JSON text without such an escape: their walk would find nothing. */
const storableJson = new WeakSet<object>();

/**
 * Notes that `value` was parsed from `text` (readJsonBody): when the text has none of the escapes that
 * could make it unstorable, the request's walk (unstorableTextPath) is skipped: it cost a heartbeat
 * about as much server time as parsing it. Any such escape (a valid surrogate pair too) means a walk.
 */
export function noteParsedJson(text: string, value: unknown): void {
  if (typeof value === "object" && value !== null && !UNSTORABLE_ESCAPE.test(text)) storableJson.add(value);
}

/** The path (`metadata.site`, `items[2]`) of the first string in `value` that cannot be stored. */
export function unstorableTextPath(value: unknown): string | undefined {
  if (typeof value === "object" && value !== null && storableJson.has(value)) return undefined;
  const trail = unstorableTextTrail(value, 0);
  if (!trail) return undefined;
  let path = "";
  for (const step of trail.reverse())
    path = typeof step === "number" ? `${path}[${step}]` : path ? `${path}.${step}` : step;
  return path || "(body)";
}

/**
 * The keys leading to the first unstorable string, innermost first (a key that is itself unstorable
 * ends the trail at its object). Every JSON body is walked: the trail is built only on the way back
 * from a find, so the common case (all text storable) allocates nothing.
 */
function unstorableTextTrail(value: unknown, depth: number): (string | number)[] | undefined {
  if (typeof value === "string") return isStorableText(value) ? undefined : [];
  if (typeof value !== "object" || value === null || depth > 64) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const trail = unstorableTextTrail(value[i], depth + 1);
      if (trail) {
        trail.push(i);
        return trail;
      }
    }
    return undefined;
  }
  if (value instanceof Blob) return undefined; // uploaded files are checked by their feature
  for (const key in value) {
    if (!isStorableText(key)) return [];
    const trail = unstorableTextTrail((value as Record<string, unknown>)[key], depth + 1);
    if (trail) {
      trail.push(key);
      return trail;
    }
  }
  return undefined;
}

export function unstorableTextError(field: string): AppError {
  return new AppError(
    400,
    "invalid_text",
    `${field} contains a NUL character or invalid Unicode (a lone surrogate), which cannot be stored`,
    { field },
  );
}

/**
 * Path segments and query parameters, percent-decoded, as the router and handlers will see them. Only a
 * percent-encoding can put NUL or a lone surrogate there: Bun refuses control characters in the request
 * line and percent-encodes any other byte that is not ASCII (tests/platform/hardening.test.ts). So a URL
 * without `%`, nearly every request, is not parsed at all.
 */
export function checkUrlText(urlText: string): void {
  if (!urlText.includes("%")) return;
  const url = new URL(urlText);
  for (const segment of url.pathname.split("/")) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw new AppError(400, "invalid_request", "The address contains a malformed percent-encoding", {
        field: "path",
      });
    }
    if (!isStorableText(decoded)) throw unstorableTextError("path");
  }
  for (const [name, value] of url.searchParams) {
    if (!isStorableText(name) || !isStorableText(value)) throw unstorableTextError(name);
  }
}

/** Whether a text holds no control characters (names shown on one line). */
export function isOneLine(text: string): boolean {
  for (const c of text) if (c < " " || c === "\x7f") return false;
  return true;
}
