import { createHash } from "node:crypto";
import { labelsProblem } from "../../shared/labels";
import { TELEMETRY_LIMITS } from "../../shared/telemetry-limits";
import { AppError, badRequest } from "../platform/errors";
import { isPlainObject, jsonLimitViolation } from "../platform/json-body";

/**
 * A MAC address as devices and operators write it: `AA:BB:CC:DD:EE:FF`, `aa-bb-cc-dd-ee-ff`,
 * `AABBCCDDEEFF`, `aabb.ccdd.eeff` (surrounding blanks allowed). The registration schema uses it too.
 */
export const MAC_PATTERN =
  "^\\s*(?:(?:[0-9A-Fa-f]{2}[:-]?){5}[0-9A-Fa-f]{2}|(?:[0-9A-Fa-f]{4}\\.){2}[0-9A-Fa-f]{4})\\s*$";
const MAC = new RegExp(MAC_PATTERN);

/** A MAC address in any accepted form → `AA:BB:CC:DD:EE:FF`; anything else → 400. */
export function normaliseMac(input: unknown): string {
  if (typeof input !== "string") throw badRequest("mac_address must be a string", { field: "mac_address" });
  if (!MAC.test(input)) throw invalidMac();
  return input
    .replace(/[\s:.-]/g, "")
    .toUpperCase()
    .match(/../g)!
    .join(":");
}

/** Longest product name and console display name a device may have. */
export const PRODUCT_NAME_MAX = 200;
export const DEVICE_NAME_MAX = 100;

function invalidMac() {
  return badRequest("mac_address must be a MAC address such as AA:BB:CC:DD:EE:FF", { field: "mac_address" });
}

export const SCHEMA_LIMITS = { maxBytes: 65_536, maxDepth: 8, maxKeys: 256 };

/**
 * The telemetry schema a device announces (registration `schema_definition` or heartbeat
 * `telemetry.meta.schema_definition`): `product` non-empty, `type` "object" if given,
 * `properties` an object if given, and bounded in size, depth and keys. 422 `invalid_schema_definition`.
 */
export function validateSchemaDefinition(
  schema: unknown,
  field = "schema_definition",
): Record<string, unknown> {
  const fail = (message: string, extra: Record<string, unknown> = {}) =>
    new AppError(422, "invalid_schema_definition", message, { field, ...extra });
  if (!isPlainObject(schema)) throw fail("The schema definition must be a JSON object");
  if (typeof schema.product !== "string" || schema.product.trim() === "") {
    throw fail("The schema definition must include a non-empty product");
  }
  if (schema.product.length > 200) throw fail("The schema product must be at most 200 characters");
  if (schema.type !== undefined && schema.type !== "object") throw fail('The schema type must be "object"');
  if (schema.properties !== undefined && !isPlainObject(schema.properties)) {
    throw fail("The schema properties must be a JSON object");
  }
  if (schema.version !== undefined && (typeof schema.version !== "string" || schema.version.length > 100)) {
    throw fail("The schema version must be a string of at most 100 characters");
  }
  const violation = jsonLimitViolation(schema, {
    maxDepth: SCHEMA_LIMITS.maxDepth,
    maxKeys: SCHEMA_LIMITS.maxKeys,
  });
  if (violation)
    throw fail(`The schema definition exceeds the maximum ${violation.limit.replace("_", " ")}`, violation);
  if (Buffer.byteLength(JSON.stringify(schema)) > SCHEMA_LIMITS.maxBytes) {
    throw fail(`The schema definition exceeds ${SCHEMA_LIMITS.maxBytes} bytes`, {
      limit: "bytes",
      max: SCHEMA_LIMITS.maxBytes,
    });
  }
  return schema;
}

/** Stable hash of a schema: key order does not matter. */
/** A schema definition a device announced, checked: its JSON text as stored, and its hash. */
export interface AnnouncedSchema {
  json: string;
  hash: string;
}

/**
 * Schemas already checked, by JSON text → hash. The agent announces its schema in every heartbeat
 * (~2.6 KB for the built-in scripts), and checking and hashing it again each time cost more server CPU
 * than the rest of the heartbeat. A fleet announces a handful of distinct schemas; the map forgets the
 * oldest past KNOWN_SCHEMAS_MAX (at most 256 × 64 KB).
 */
const knownSchemas = new Map<string, string>();
const KNOWN_SCHEMAS_MAX = 256;

/**
 * validateSchemaDefinition (422 invalid_schema_definition) and schemaHash of a schema parsed from a
 * request's JSON, remembered by its JSON text: the same text is the same value, so the same verdict.
 */
export function announcedSchema(schema: unknown, field = "schema_definition"): AnnouncedSchema {
  const json = isPlainObject(schema) ? JSON.stringify(schema) : undefined;
  const known = json === undefined ? undefined : knownSchemas.get(json);
  if (json !== undefined && known !== undefined) return { json, hash: known };
  const checked = validateSchemaDefinition(schema, field);
  const hash = schemaHash(checked);
  const text = json ?? JSON.stringify(checked);
  if (knownSchemas.size >= KNOWN_SCHEMAS_MAX) knownSchemas.delete(knownSchemas.keys().next().value!);
  knownSchemas.set(text, hash);
  return { json: text, hash };
}

export function schemaHash(schema: Record<string, unknown>): string {
  return createHash("sha256").update(canonicalJson(schema)).digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The labels a registration declares (shared/labels.ts rules): 400 naming the bad label. */
export function validateLabels(labels: Record<string, string>): Record<string, string> {
  const problem = labelsProblem(labels);
  if (problem) throw badRequest(`labels: ${problem.message}`, { field: "labels", key: problem.key });
  return labels;
}

/** Longest operator notes on a device. */
export const DEVICE_NOTES_MAX = 4000;

export const METADATA_LIMITS = { maxBytes: 16_384, maxDepth: 6, maxKeys: 256 };

export function validateMetadata(metadata: unknown): Record<string, unknown> {
  if (!isPlainObject(metadata)) throw badRequest("metadata must be a JSON object", { field: "metadata" });
  const violation = jsonLimitViolation(metadata, {
    maxDepth: METADATA_LIMITS.maxDepth,
    maxKeys: METADATA_LIMITS.maxKeys,
  });
  if (violation)
    throw badRequest(`metadata exceeds the maximum ${violation.limit.replace("_", " ")}`, {
      field: "metadata",
      ...violation,
    });
  if (Buffer.byteLength(JSON.stringify(metadata)) > METADATA_LIMITS.maxBytes) {
    throw badRequest(`metadata exceeds ${METADATA_LIMITS.maxBytes} bytes`, { field: "metadata" });
  }
  return metadata;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** metadata.ip_address when it is a dotted quad, else null. */
export function ipv4From(metadata: Record<string, unknown> | undefined): string | null {
  const value = metadata?.ip_address;
  return typeof value === "string" && IPV4.test(value.trim()) ? value.trim() : null;
}

export { TELEMETRY_LIMITS };
