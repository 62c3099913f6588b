import { findTelemetrySchemas, listTelemetrySchemas } from "../devices/service";
import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isPlainObject } from "../platform/json-body";
import { firstInvalidField } from "../platform/schemas";
import { BUILDER_VALIDATION_FIELDS, BUILDERS, type Builder, builderValidationBody } from "./model";

/**
 * Builder schemas: the telemetry schemas devices announced, keyed by the schema's `product`
 * (schema_id) and `version` (schema_version, "v1" when absent). Alert and report builders offer
 * their fields as dropdown options.
 */

export interface SchemaReferenceView {
  schema_id: string;
  schema_version: string;
  product_name: string;
  readable: true;
}

export interface SchemaOption {
  key: string;
  label: string;
  value_type: string;
  order_index: number;
  selectable: true;
}

export async function listBuilderSchemas(sql: Sql): Promise<SchemaReferenceView[]> {
  const references = await listTelemetrySchemas(sql);
  return references.map((r) => ({
    schema_id: r.product,
    schema_version: r.version,
    product_name: r.product,
    readable: true,
  }));
}

const SKIPPED_TOP_LEVEL = new Set(["product", "version", "type"]);

function humanise(segment: string): string {
  return segment
    .split(/[_\s]+/)
    .filter(Boolean)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join(" ");
}

/**
 * A JSON schema `type` as one value type: a nullable type (`[number, "null"]`, as the agent's disk
 * script declares `root_used_pct`) is that type, since a null value is simply absent to every reader.
 */
function valueTypeOf(type: unknown): string {
  if (typeof type === "string") return type;
  const types = Array.isArray(type) ? type.filter((t) => t !== "null") : [];
  return types.length === 1 && typeof types[0] === "string" ? types[0] : "unknown";
}

/**
 * Flattens a schema into dotted field paths: `properties` are followed recursively (a property
 * with its own `properties` is descended into, anything else is a leaf); without `properties` the
 * map itself is flattened. Keys unique and sorted; labels humanised from the last segment, with
 * the path added when two keys share a label; value_type from the property's `type` (valueTypeOf).
 */
export function schemaOptionsOf(schema: unknown): SchemaOption[] {
  if (!isPlainObject(schema)) return [];
  const leaves = new Map<string, string>();
  const walkProperties = (properties: Record<string, unknown>, prefix: string) => {
    for (const [name, definition] of Object.entries(properties)) {
      const key = prefix ? `${prefix}.${name}` : name;
      if (isPlainObject(definition) && isPlainObject(definition.properties)) {
        walkProperties(definition.properties, key);
      } else {
        leaves.set(key, isPlainObject(definition) ? valueTypeOf(definition.type) : "unknown");
      }
    }
  };
  const walkGeneric = (node: Record<string, unknown>, prefix: string) => {
    for (const [name, value] of Object.entries(node)) {
      if (prefix === "" && SKIPPED_TOP_LEVEL.has(name)) continue;
      const key = prefix ? `${prefix}.${name}` : name;
      if (isPlainObject(value) && Object.keys(value).length > 0) walkGeneric(value, key);
      else leaves.set(key, "unknown");
    }
  };
  if (isPlainObject(schema.properties)) walkProperties(schema.properties, "");
  else walkGeneric(schema, "");
  const keys = [...leaves.keys()].sort();
  const labelCounts = new Map<string, number>();
  for (const key of keys) {
    const label = humanise(key.split(".").pop()!);
    labelCounts.set(label, (labelCounts.get(label) ?? 0) + 1);
  }
  return keys.map((key, index) => {
    const base = humanise(key.split(".").pop()!);
    return {
      key,
      label: (labelCounts.get(base) ?? 0) > 1 ? `${base} (${key})` : base,
      value_type: leaves.get(key)!,
      order_index: index,
      selectable: true,
    };
  });
}

type Resolved = { ok: true; options: SchemaOption[] } | { ok: false; reason: "not_found" | "conflict" };

async function resolveOptions(sql: Sql, schemaId: string, version: string): Promise<Resolved> {
  const schemas = await findTelemetrySchemas(sql, schemaId, version);
  if (schemas.length === 0) return { ok: false, reason: "not_found" };
  if (schemas.length > 1) return { ok: false, reason: "conflict" };
  return { ok: true, options: schemaOptionsOf(schemas[0]) };
}

function checkRequest(schemaId: unknown, version: unknown, builder: unknown): asserts builder is Builder {
  if (typeof schemaId !== "string" || schemaId.trim() === "" || schemaId.length > 200)
    throw invalidOptionsRequest();
  if (typeof version !== "string" || version.trim() === "" || version.length > 100)
    throw invalidOptionsRequest();
  if (!(BUILDERS as readonly string[]).includes(builder as string)) throw invalidOptionsRequest();
}

const invalidOptionsRequest = () =>
  new AppError(422, "invalid_options_request", "Invalid schema options request");

/** 404 schema_not_found, 409 schema_conflict (devices announced diverging schemas), 422 invalid_validation_payload. */
export async function builderSchemaOptions(
  sql: Sql,
  schemaId: string,
  version: string,
  builder: unknown = "alert",
) {
  const started = performance.now();
  checkRequest(schemaId, version, builder);
  const resolved = await resolveOptions(sql, schemaId, version);
  if (!resolved.ok) {
    if (resolved.reason === "not_found")
      throw new AppError(404, "schema_not_found", "Schema reference not found");
    throw new AppError(409, "schema_conflict", "Schema definitions conflict for this product/version");
  }
  return {
    schema_id: schemaId,
    schema_version: version,
    builder,
    load_time_ms: Math.round(performance.now() - started),
    options: resolved.options,
  };
}

export interface ValidationIssue {
  issue_code: "invalid_schema_field" | "schema_unavailable" | "schema_conflict" | "schema_access_lost";
  message: string;
  slot_id: string | null;
  blocking: boolean;
}

export interface ValidationResult {
  valid: boolean;
  issues: ValidationIssue[];
  cleared_slot_ids: string[];
}

/**
 * Checks a builder configuration's selections against the schema's options. Invalid shape →
 * 422 invalid_validation_payload. Empty selected_key is not an issue.
 */
export async function validateBuilderConfiguration(sql: Sql, body: unknown): Promise<ValidationResult> {
  if (!builderValidationBody.Check(body)) {
    const field = firstInvalidField(builderValidationBody, body, BUILDER_VALIDATION_FIELDS);
    throw new AppError(
      422,
      "invalid_validation_payload",
      "Invalid validation payload",
      field ? { field } : undefined,
    );
  }
  const { schema_id: schemaId, schema_version: version, selections } = body;
  const resolved = await resolveOptions(sql, schemaId, version);
  if (!resolved.ok) {
    const issue: ValidationIssue =
      resolved.reason === "not_found"
        ? {
            issue_code: "schema_unavailable",
            message: "Schema options are unavailable.",
            slot_id: null,
            blocking: true,
          }
        : {
            issue_code: "schema_conflict",
            message: "Schema definitions conflict for this product/version.",
            slot_id: null,
            blocking: true,
          };
    return { valid: false, issues: [issue], cleared_slot_ids: [] };
  }
  const keys = new Set(resolved.options.map((o) => o.key));
  const issues: ValidationIssue[] = [];
  for (const selection of selections) {
    if (!selection.selected_key) continue;
    if (!keys.has(selection.selected_key)) {
      issues.push({
        issue_code: "invalid_schema_field",
        message: "Selection is not valid for active schema",
        slot_id: selection.slot_id,
        blocking: true,
      });
    }
  }
  return {
    valid: issues.length === 0,
    issues,
    cleared_slot_ids: [...new Set(issues.map((i) => i.slot_id).filter((id): id is string => id !== null))],
  };
}
