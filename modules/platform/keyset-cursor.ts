import { badRequest } from "./errors";
import { isUuid } from "./json-body";

/**
 * Opaque keyset-pagination cursors: the sort key(s) of a page's last row followed by its id,
 * as base64url JSON. Every keyset list (devices, commands, telemetry, the console) uses these.
 */
export function encodeKeysetCursor(values: string[]): string {
  return Buffer.from(JSON.stringify(values)).toString("base64url");
}

export interface KeysetCursorShape {
  /** How many sort keys precede the id (default 1). */
  keys?: number;
  /** The first sort key is a timestamp. */
  time?: boolean;
}

/** The values of a cursor made by encodeKeysetCursor, or undefined when it is not one. */
export function decodeKeysetCursor(cursor: string, shape: KeysetCursorShape = {}): string[] | undefined {
  const keys = shape.keys ?? 1;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (
      Array.isArray(value) &&
      value.length === keys + 1 &&
      value.every((v) => typeof v === "string" && v.length <= 500) &&
      isUuid(value[keys]) &&
      (!shape.time || !Number.isNaN(Date.parse(value[0])))
    ) {
      return value as string[];
    }
  } catch {
    // not base64url JSON: treated like any other foreign cursor below
  }
  return undefined;
}

/** decodeKeysetCursor for API lists: a foreign cursor is a 400 `invalid_request` on `cursor`. */
export function parseKeysetCursor(cursor: string, shape: KeysetCursorShape = {}): string[] {
  const values = decodeKeysetCursor(cursor, shape);
  if (!values) throw badRequest("The page cursor is not valid", { field: "cursor" });
  return values;
}

/**
 * A keyset page from the `limit + 1` rows a list read: the first `limit`, and when there were more, the
 * cursor after the last of them (`keysOf`: its sort keys, then its id).
 */
export function keysetPage<Row>(
  rows: Row[],
  limit: number,
  keysOf: (last: Row) => string[],
): { page: Row[]; nextCursor: string | undefined } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { page, nextCursor: rows.length > limit && last ? encodeKeysetCursor(keysOf(last)) : undefined };
}
