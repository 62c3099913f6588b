import { listSchemaProducts, productSchemas } from "../devices/service";
import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isPlainObject } from "../platform/json-body";
import type { Builder, BuilderValidationBody } from "./model";

/**
 * Builder schemas: per product (schema_id: the `product` of the schemas devices announce), the fields
 * (`<script>.<field>` with a type) that its approved devices declare now, offered as dropdown options
 * by the alert and report builders. A device's own schema version changes whenever its script set
 * does, so nothing is keyed by it: each product has one builder version, "current", and the options
 * path answers the product's current fields whatever version it names (clients may still send the
 * one they saved). docs/reports.md, "Fields".
 */
export const CURRENT_VERSION = "current";

export interface SchemaReferenceView {
  schema_id: string;
  schema_version: string;
  product_name: string;
  readable: true;
}

export interface FieldTypeCount {
  type: string;
  devices: number;
}

export interface SchemaOption {
  key: string;
  label: string;
  /** The declared type; "conflict" when approved devices declare different types (see `conflict`). */
  value_type: string;
  order_index: number;
  /** False for a conflicting field: a new rule cannot pick it until the devices agree. */
  selectable: boolean;
  /** The types approved devices declare for a conflicting field, most devices first. */
  conflict?: FieldTypeCount[];
}

export async function listBuilderSchemas(sql: Sql): Promise<SchemaReferenceView[]> {
  const products = await listSchemaProducts(sql);
  return products.map((p) => ({
    schema_id: p.product,
    schema_version: CURRENT_VERSION,
    product_name: p.product,
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
 * map itself is flattened. The type of a leaf is its `type` (valueTypeOf), else "unknown".
 */
function fieldTypesOf(schema: unknown): Map<string, string> {
  const leaves = new Map<string, string>();
  if (!isPlainObject(schema)) return leaves;
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
  return leaves;
}

/** Options from field types: keys unique and sorted; labels humanised from the last segment, with the path added when two keys share a label. */
function optionsOf(fields: Map<string, { type: string; conflict?: FieldTypeCount[] }>): SchemaOption[] {
  const keys = [...fields.keys()].sort();
  const labelCounts = new Map<string, number>();
  for (const key of keys) {
    const label = humanise(key.split(".").pop()!);
    labelCounts.set(label, (labelCounts.get(label) ?? 0) + 1);
  }
  return keys.map((key, index) => {
    const base = humanise(key.split(".").pop()!);
    const { type, conflict } = fields.get(key)!;
    return {
      key,
      label: (labelCounts.get(base) ?? 0) > 1 ? `${base} (${key})` : base,
      value_type: type,
      order_index: index,
      selectable: !conflict,
      ...(conflict ? { conflict } : {}),
    };
  });
}

const NUMERIC = new Set(["integer", "number"]);

/**
 * The union of the fields of several schemas. A field declared without a type by some devices takes
 * the others' type; `integer` and `number` together are `number`; other differing types are a
 * conflict, with the device count of each type.
 */
export function mergedOptionsOf(schemas: { schema: unknown; devices: number }[]): SchemaOption[] {
  const counts = new Map<string, Map<string, number>>();
  for (const { schema, devices } of schemas) {
    for (const [key, type] of fieldTypesOf(schema)) {
      const types = counts.get(key) ?? new Map<string, number>();
      types.set(type, (types.get(type) ?? 0) + devices);
      counts.set(key, types);
    }
  }
  const fields = new Map<string, { type: string; conflict?: FieldTypeCount[] }>();
  for (const [key, types] of counts) {
    const known = [...types].filter(([type]) => type !== "unknown");
    if (known.length === 0) fields.set(key, { type: "unknown" });
    else if (known.length === 1) fields.set(key, { type: known[0]![0] });
    else if (known.every(([type]) => NUMERIC.has(type))) fields.set(key, { type: "number" });
    else {
      const conflict = known
        .map(([type, devices]) => ({ type, devices }))
        .sort((a, b) => b.devices - a.devices || a.type.localeCompare(b.type));
      fields.set(key, { type: "conflict", conflict });
    }
  }
  return optionsOf(fields);
}

/** "number on 3 devices, string on 1": how a conflicting field is described to operators. */
export function describeConflict(conflict: FieldTypeCount[]): string {
  return conflict
    .map((c, i) => `${c.type} on ${c.devices}${i === 0 ? ` device${c.devices === 1 ? "" : "s"}` : ""}`)
    .join(", ");
}

/** The message for a field approved devices declare with different types. */
export function conflictMessage(option: SchemaOption): string {
  return `Devices of this product declare this field with different types (${describeConflict(option.conflict ?? [])}).`;
}

/**
 * The product's current options (product null: every product's, merged), or null when no approved
 * device of it announces a schema.
 */
export async function productOptions(sql: Sql, product: string | null): Promise<SchemaOption[] | null> {
  const schemas = await productSchemas(sql, product);
  return schemas.length === 0 ? null : mergedOptionsOf(schemas);
}

/** The product's current field options (whatever version is asked for); 404 schema_not_found. */
export async function builderSchemaOptions(sql: Sql, schemaId: string, builder: Builder) {
  const started = performance.now();
  const options = await productOptions(sql, schemaId);
  if (!options) throw new AppError(404, "schema_not_found", "Schema reference not found");
  return {
    schema_id: schemaId,
    schema_version: CURRENT_VERSION,
    builder,
    load_time_ms: Math.round(performance.now() - started),
    options,
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
 * Checks a builder configuration's selections against the product's current options (its shape is the
 * route's schema: 422 invalid_validation_payload). Empty selected_key is not an issue. A field whose type approved
 * devices disagree on is a `schema_conflict` issue: blocking for alerts (a rule compares by type),
 * not for reports (the column shows the values as text).
 */
export async function validateBuilderConfiguration(
  sql: Sql,
  body: BuilderValidationBody,
): Promise<ValidationResult> {
  const { builder, schema_id: schemaId, selections } = body;
  const options = await productOptions(sql, schemaId);
  if (!options) {
    const issue: ValidationIssue = {
      issue_code: "schema_unavailable",
      message: "Schema options are unavailable.",
      slot_id: null,
      blocking: true,
    };
    return { valid: false, issues: [issue], cleared_slot_ids: [] };
  }
  const byKey = new Map(options.map((o) => [o.key, o]));
  const issues: ValidationIssue[] = [];
  const cleared: string[] = [];
  for (const selection of selections) {
    if (!selection.selected_key) continue;
    const option = byKey.get(selection.selected_key);
    if (!option) {
      issues.push({
        issue_code: "invalid_schema_field",
        message: "Selection is not valid for active schema",
        slot_id: selection.slot_id,
        blocking: true,
      });
      cleared.push(selection.slot_id);
    } else if (option.conflict) {
      issues.push({
        issue_code: "schema_conflict",
        message: conflictMessage(option),
        slot_id: selection.slot_id,
        blocking: builder === "alert",
      });
    }
  }
  return {
    valid: !issues.some((i) => i.blocking),
    issues,
    cleared_slot_ids: [...new Set(cleared)],
  };
}
