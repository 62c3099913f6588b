import { HEARTBEAT_MAX_BYTES, TELEMETRY_LIMITS } from "../shared/telemetry-limits.ts";

/**
 * The agent's check of the heartbeat limits it shares with the server (shared/telemetry-limits.ts).
 * The walk is the server's `jsonLimitViolation` (modules/platform/json-body.ts) plus the path of the
 * violation, for the script author; tests/agent/telemetry-limits.test.ts fails when the two disagree.
 */
export { HEARTBEAT_MAX_BYTES, TELEMETRY_LIMITS };

/**
 * Depth at which a script's output sits in the payload the server checks:
 * telemetry (1) → scripts (2) → <name> (3) → data (4) → output (5).
 */
export const OUTPUT_DEPTH = 5;

export interface JsonLimits {
  maxDepth: number;
  maxKeys: number;
  maxKeysPerObject?: number;
  maxArrayItems?: number;
  maxStringBytes?: number;
}

export interface LimitViolation {
  limit: "depth" | "keys" | "keys_per_object" | "array_items" | "string_bytes";
  max: number;
  /** Where, as a dotted path from the checked value (e.g. `blob` or `items[3].name`). */
  path: string;
}

/** The first limit a JSON value breaks, or undefined (same walk as the server's; root depth = 1). */
export function jsonLimitViolation(value: unknown, limits: JsonLimits): LimitViolation | undefined {
  let keys = 0;
  const walk = (node: unknown, depth: number, at: string): LimitViolation | undefined => {
    if (typeof node === "string") {
      if (limits.maxStringBytes !== undefined && node.length > limits.maxStringBytes) {
        if (Buffer.byteLength(node) > limits.maxStringBytes)
          return { limit: "string_bytes", max: limits.maxStringBytes, path: at };
      }
      return undefined;
    }
    if (typeof node !== "object" || node === null) return undefined;
    if (depth > limits.maxDepth) return { limit: "depth", max: limits.maxDepth, path: at };
    if (Array.isArray(node)) {
      if (limits.maxArrayItems !== undefined && node.length > limits.maxArrayItems)
        return { limit: "array_items", max: limits.maxArrayItems, path: at };
      for (let i = 0; i < node.length; i++) {
        const found = walk(node[i], depth + 1, `${at}[${i}]`);
        if (found) return found;
      }
      return undefined;
    }
    let own = 0;
    for (const key in node) {
      own++;
      keys++;
      if (keys > limits.maxKeys) return { limit: "keys", max: limits.maxKeys, path: at };
      if (limits.maxKeysPerObject !== undefined && own > limits.maxKeysPerObject)
        return { limit: "keys_per_object", max: limits.maxKeysPerObject, path: at };
      const found = walk((node as Record<string, unknown>)[key], depth + 1, at ? `${at}.${key}` : key);
      if (found) return found;
    }
    return undefined;
  };
  return walk(value, 1, "");
}

/** The limits one script's output must meet on its own (its depth counted from where it sits). */
export const OUTPUT_LIMITS: JsonLimits = {
  ...TELEMETRY_LIMITS,
  maxDepth: TELEMETRY_LIMITS.maxDepth - (OUTPUT_DEPTH - 1),
};

/** Largest JSON text of one output: what leaves room for the rest of a heartbeat. */
export const OUTPUT_MAX_BYTES = 128 * 1024;

/** Why a script's output cannot be sent, as one line (`output exceeds telemetry limits: …`), or null. */
export function outputLimitProblem(output: unknown): string | null {
  const violation = jsonLimitViolation(output, OUTPUT_LIMITS);
  if (violation) {
    const where = violation.path ? `output.${violation.path}` : "output";
    const what: Record<LimitViolation["limit"], string> = {
      depth: `nested deeper than ${violation.max} levels`,
      keys: `more than ${violation.max} keys in total`,
      keys_per_object: `more than ${violation.max} keys in one object`,
      array_items: `more than ${violation.max} array items`,
      string_bytes: `a string longer than ${violation.max} bytes`,
    };
    return `output exceeds telemetry limits: ${where} has ${what[violation.limit]}`;
  }
  const bytes = Buffer.byteLength(JSON.stringify(output) ?? "");
  if (bytes > OUTPUT_MAX_BYTES)
    return `output exceeds telemetry limits: ${bytes} bytes of JSON (max ${OUTPUT_MAX_BYTES})`;
  return null;
}
