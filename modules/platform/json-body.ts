import { AppError } from "./errors";
import { noteParsedJson } from "./text-input";

/**
 * Reads a JSON request body with a size limit of its own (the app-wide limit is far larger):
 * `payload_too_large` (413) above `maxBytes`, `invalid_json` (400) when it does not parse. (The body
 * is read even when too large — at most the app-wide 16 MiB — because a response to an unread body
 * leaves the keep-alive connection hanging.) An empty body reads as `undefined`.
 * Use as a route's `parse` hook so Elysia's own parser never runs. Elysia turns anything a parse
 * hook throws into a generic parse error, so problems are returned as a BodyError instead: the
 * route's schema validation raises it (validationFailure), or the app's beforeHandle hook does.
 */
/** Shared: a decoder per request cost more than the decoding (replacing invalid UTF-8, never throwing). */
const utf8 = new TextDecoder();

export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const bytes = await request.arrayBuffer();
  if (bytes.byteLength > maxBytes) return new BodyError(tooLarge(maxBytes));
  if (bytes.byteLength === 0) return undefined;
  try {
    const text = utf8.decode(bytes);
    const value: unknown = JSON.parse(text);
    noteParsedJson(text, value);
    return value;
  } catch {
    return new BodyError(new AppError(400, "invalid_json", "The request body is not valid JSON"));
  }
}

export class BodyError {
  constructor(readonly error: AppError) {}
}

function tooLarge(maxBytes: number): AppError {
  return new AppError(413, "payload_too_large", `The request body exceeds ${maxBytes} bytes`, {
    max_bytes: maxBytes,
  });
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export interface JsonLimits {
  maxDepth: number;
  maxKeys: number;
  maxKeysPerObject?: number;
  maxArrayItems?: number;
  maxStringBytes?: number;
}

/** The first limit a JSON value breaks, or undefined. Depth counts nested objects/arrays (root = 1). */
export function jsonLimitViolation(
  value: unknown,
  limits: JsonLimits,
): { limit: string; max: number } | undefined {
  let keys = 0;
  const walk = (node: unknown, depth: number): { limit: string; max: number } | undefined => {
    if (typeof node === "string") {
      if (limits.maxStringBytes !== undefined && node.length > limits.maxStringBytes) {
        if (Buffer.byteLength(node) > limits.maxStringBytes)
          return { limit: "string_bytes", max: limits.maxStringBytes };
      }
      return undefined;
    }
    if (typeof node !== "object" || node === null) return undefined;
    if (depth > limits.maxDepth) return { limit: "depth", max: limits.maxDepth };
    if (Array.isArray(node)) {
      if (limits.maxArrayItems !== undefined && node.length > limits.maxArrayItems) {
        return { limit: "array_items", max: limits.maxArrayItems };
      }
      for (const item of node) {
        const found = walk(item, depth + 1);
        if (found) return found;
      }
      return undefined;
    }
    let own = 0;
    for (const key in node) {
      own++;
      keys++;
      if (keys > limits.maxKeys) return { limit: "keys", max: limits.maxKeys };
      if (limits.maxKeysPerObject !== undefined && own > limits.maxKeysPerObject) {
        return { limit: "keys_per_object", max: limits.maxKeysPerObject };
      }
      const found = walk((node as Record<string, unknown>)[key], depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return walk(value, 1);
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === "string" && UUID_PATTERN.test(value);
}
