/**
 * The fleet query language (docs/fleet.md): `tag:site=berlin status:online -tag:env=lab "free text"`.
 * Pure: text in, a Query or a QueryError (position and message) out. Terms separated by spaces are
 * ANDed; `OR` between terms of one key, or commas inside one (`tag:site=berlin,munich`), makes
 * alternatives; a leading `-` negates a term. ./compile.ts turns a Query into SQL.
 */
import { labelKeyProblem, labelValueProblem } from "../../../shared/labels";

export const QUERY_MAX_LENGTH = 1000;
export const QUERY_TERMS_MAX = 32;
export const QUERY_VALUES_MAX = 64;
export const QUERY_KEYS = ["tag", "status", "approval", "product", "last_seen"] as const;
export type QueryKey = (typeof QUERY_KEYS)[number];
export const STATUSES = ["online", "offline"] as const;
export const APPROVALS = ["pending", "approved", "rejected"] as const;
const PRODUCT_MAX = 200;

export type Condition =
  /** A tag or agent label with this key, and one of these values (null: any value). */
  | { kind: "tag"; key: string; values: string[] | null }
  | { kind: "status"; value: (typeof STATUSES)[number] }
  | { kind: "approval"; value: (typeof APPROVALS)[number] }
  | { kind: "product"; value: string }
  /** Last seen more (`older`) or less than `seconds` ago; never seen counts as older. */
  | { kind: "last_seen"; older: boolean; seconds: number }
  | { kind: "never_seen" }
  | { kind: "text"; text: string };

/** One term: any of its conditions (alternatives of one key), negated or not. */
export interface Term {
  negated: boolean;
  anyOf: Condition[];
}

/** Every term must hold (AND). No terms: every device. */
export interface Query {
  terms: Term[];
}

/** A query that cannot be read: where (0-based character offset and length) and why. */
export class QueryError extends Error {
  override name = "QueryError";
  constructor(
    message: string,
    readonly position: number,
    readonly length: number,
  ) {
    super(message);
  }
}

interface Word {
  text: string;
  at: number;
}

/** Splits on whitespace outside double quotes (`\"` and `\\` escape inside them). */
function words(input: string): Word[] {
  const found: Word[] = [];
  let i = 0;
  while (i < input.length) {
    while (i < input.length && /\s/.test(input[i]!)) i++;
    if (i >= input.length) break;
    const start = i;
    let quoteAt = -1;
    while (i < input.length && (quoteAt >= 0 || !/\s/.test(input[i]!))) {
      if (input[i] === "\\" && quoteAt >= 0) i++;
      else if (input[i] === '"') quoteAt = quoteAt >= 0 ? -1 : i;
      i++;
    }
    if (quoteAt >= 0) throw new QueryError("This quote is never closed", quoteAt, 1);
    found.push({ text: input.slice(start, i), at: start });
  }
  return found;
}

/** A value: `"quoted"` (unescaped) or bare. A quote inside a bare value is an error. */
function unquote(raw: string, at: number): string {
  if (raw.startsWith('"')) {
    let close = 1;
    while (close < raw.length && raw[close] !== '"') close += raw[close] === "\\" ? 2 : 1;
    if (close >= raw.length) throw new QueryError("This quote is never closed", at, 1);
    if (close !== raw.length - 1)
      throw new QueryError("Nothing may follow the closing quote", at + close + 1, raw.length - close - 1);
    return raw.slice(1, -1).replace(/\\(.)/g, "$1");
  }
  const quote = raw.indexOf('"');
  if (quote >= 0) throw new QueryError("Put the whole value in quotes", at + quote, 1);
  return raw;
}

/** Splits `a,"b,c",d` on commas outside quotes, with each piece's offset. */
function commaList(raw: string, at: number): Word[] {
  const pieces: Word[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i <= raw.length; i++) {
    const c = raw[i];
    if (c === "\\" && quoted) i++;
    else if (c === '"') quoted = !quoted;
    else if ((c === "," && !quoted) || i === raw.length) {
      pieces.push({ text: raw.slice(start, i), at: at + start });
      start = i + 1;
    }
  }
  if (pieces.length > QUERY_VALUES_MAX)
    throw new QueryError(`At most ${QUERY_VALUES_MAX} values in one list`, at, raw.length);
  for (const piece of pieces)
    if (piece.text === "") throw new QueryError("A value is missing here", piece.at, 1);
  return pieces;
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

function lastSeen(piece: Word): Condition {
  if (piece.text === "never") return { kind: "never_seen" };
  const match = /^([<>])(\d{1,6})([smhdw])$/.exec(piece.text);
  if (!match)
    throw new QueryError(
      "last_seen takes >N or <N with a unit s, m, h, d or w (last_seen:>1h), or never",
      piece.at,
      piece.text.length,
    );
  return { kind: "last_seen", older: match[1] === ">", seconds: Number(match[2]) * UNITS[match[3]!]! };
}

function oneOf<T extends string>(key: string, allowed: readonly T[], piece: Word): T {
  const value = unquote(piece.text, piece.at);
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new QueryError(`${key} must be ${allowed.join(" or ")}`, piece.at, piece.text.length);
}

/** `tag:key`, `tag:key=value`, `tag:key=v1,v2` (one key, any of the values). */
function tagCondition(raw: string, at: number): Condition {
  const [first, ...more] = commaList(raw, at);
  const eq = first!.text.indexOf("=");
  const key = eq < 0 ? first!.text : first!.text.slice(0, eq);
  const keyProblem = labelKeyProblem(key);
  if (keyProblem) throw new QueryError(`A tag key ${keyProblem}`, at, Math.max(key.length, 1));
  if (eq < 0) {
    if (more.length > 0)
      throw new QueryError("Give a value to list more values: tag:key=a,b", more[0]!.at - 1, 1);
    return { kind: "tag", key, values: null };
  }
  const values = [{ text: first!.text.slice(eq + 1), at: first!.at + eq + 1 }, ...more].map((piece) => {
    const value = unquote(piece.text, piece.at);
    const problem = labelValueProblem(value);
    if (problem) throw new QueryError(`A tag value ${problem}`, piece.at, Math.max(piece.text.length, 1));
    return value;
  });
  return { kind: "tag", key, values };
}

/** The conditions of `key:raw` (several for a comma list: alternatives). */
function fieldConditions(key: QueryKey, raw: string, at: number): Condition[] {
  if (raw === "") throw new QueryError(`${key}: needs a value`, at - 1, 1);
  if (key === "tag") return [tagCondition(raw, at)];
  return commaList(raw, at).map((piece): Condition => {
    switch (key) {
      case "status":
        return { kind: "status", value: oneOf(key, STATUSES, piece) };
      case "approval":
        return { kind: "approval", value: oneOf(key, APPROVALS, piece) };
      case "product": {
        const value = unquote(piece.text, piece.at);
        if (value === "" || value.length > PRODUCT_MAX)
          throw new QueryError(`A product is 1 to ${PRODUCT_MAX} characters`, piece.at, piece.text.length);
        return { kind: "product", value };
      }
      default:
        return lastSeen(piece);
    }
  });
}

/** One word as a term with its key (`text` for free text). */
function termOf(word: Word): { key: QueryKey | "text"; term: Term } {
  const negated = word.text.length > 1 && word.text.startsWith("-");
  const body = negated ? word.text.slice(1) : word.text;
  const at = negated ? word.at + 1 : word.at;
  const keyed = /^([a-z_]+):/.exec(body);
  if (keyed) {
    const key = keyed[1]!;
    if ((QUERY_KEYS as readonly string[]).includes(key)) {
      const anyOf = fieldConditions(key as QueryKey, body.slice(key.length + 1), at + key.length + 1);
      return { key: key as QueryKey, term: { negated, anyOf } };
    }
    // Part of a MAC address (`aa:bb`) is free text; any other word before a colon is a mistyped key.
    if (!/^[0-9a-f]{1,2}$/.test(key))
      throw new QueryError(
        `Unknown key "${key}": use ${QUERY_KEYS.map((k) => `${k}:`).join(", ")} or put the text in quotes`,
        at,
        key.length,
      );
  }
  const text = unquote(body, at);
  if (text.trim() === "") throw new QueryError("Empty quotes: give the text to look for", at, body.length);
  return { key: "text", term: { negated, anyOf: [{ kind: "text", text }] } };
}

/** Parses a query; throws QueryError pointing at the first bad token. */
export function parseQuery(input: string): Query {
  if (input.length > QUERY_MAX_LENGTH)
    throw new QueryError(`A query is at most ${QUERY_MAX_LENGTH} characters`, QUERY_MAX_LENGTH, 1);
  const terms: Term[] = [];
  let previous: { key: QueryKey | "text"; word: Word } | undefined;
  let pendingOr: Word | undefined;
  for (const word of words(input)) {
    if (word.text === "OR") {
      if (!previous || pendingOr) throw new QueryError("OR needs a term on each side", word.at, 2);
      pendingOr = word;
      continue;
    }
    const { key, term } = termOf(word);
    if (pendingOr) {
      const last = terms[terms.length - 1]!;
      if (key !== previous!.key)
        throw new QueryError(
          `OR joins terms of one key: ${previous!.key === "text" ? "free text" : `${previous!.key}:`} cannot be ORed with ${key === "text" ? "free text" : `${key}:`}`,
          word.at,
          word.text.length,
        );
      if (term.negated || last.negated)
        throw new QueryError(
          "A negated term cannot be part of OR: negate each term instead",
          term.negated ? word.at : previous!.word.at,
          1,
        );
      last.anyOf.push(...term.anyOf);
      pendingOr = undefined;
    } else {
      if (terms.length >= QUERY_TERMS_MAX)
        throw new QueryError(`At most ${QUERY_TERMS_MAX} terms in one query`, word.at, word.text.length);
      terms.push(term);
    }
    previous = { key, word };
  }
  if (pendingOr) throw new QueryError("OR needs a term on each side", pendingOr.at, 2);
  return { terms };
}
