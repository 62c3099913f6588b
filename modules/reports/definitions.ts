/**
 * Report definitions: the builder options a report may use, validation with the reference's
 * messages, and storage. Nothing is written unless the whole definition is valid.
 */
import { Value } from "@sinclair/typebox/value";
import type { Clock } from "../../shared/clock";
import { productOptions, type SchemaOption } from "../builder/service";
import type { Sql } from "../platform/database";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import {
  type FilterOperator,
  NUMBER_OPERATORS,
  RESERVED_ALIASES,
  type Report,
  type ReportConfig,
  ReportInputSchema,
  TEXT_OPERATORS,
} from "./model";

export const MESSAGES = {
  nameBlank: "Report Name can't be blank.",
  nameTaken: "Report title is already used.",
  nameTakenFlash: "Choose a unique report title.",
  invalidField: "Selection is not valid for active schema",
  invalidFieldFlash: "Please reselect invalid fields before saving.",
  valueType: "Please correct filter value types before saving.",
  schemaUnavailable: "Schema options are unavailable.",
  aliasTaken: "Column title is already used in this report.",
  aliasReserved: "This column title is reserved; choose another.",
  invalid: "Unable to save report",
} as const;

const NUMERIC_TYPES = new Set(["integer", "number", "float", "decimal"]);
export const isNumericType = (valueType: string | undefined) => NUMERIC_TYPES.has(valueType ?? "");

export type OptionsResult = { ok: true; options: SchemaOption[] } | { ok: false; message: string };

/**
 * The `builder=report` options of a product: the fields its approved devices declare now; schemaId
 * null: of every product (the reference's "all schemas" scope). A field declared with different types
 * is offered as a conflict (value_type "conflict", read as text).
 */
export async function reportOptions(sql: Sql, schemaId: string | null): Promise<OptionsResult> {
  const options = await productOptions(sql, schemaId);
  if (options) return { ok: true, options };
  return schemaId === null ? { ok: true, options: [] } : { ok: false, message: MESSAGES.schemaUnavailable };
}

const OPTIONS_TTL_MS = 10_000;

/**
 * reportOptions for reading results and lists, reused for 10 s: it reads and merges every schema the
 * product's approved devices announce, too much to repeat on each page of a CSV export or results call.
 * Saving a report always checks against fresh options (validateReport). One per process (built by
 * createServices); a stale type only changes whether a field is treated as numeric for those seconds.
 */
export class ReportOptionsCache {
  private readonly entries = new Map<string, { at: number; result: Promise<OptionsResult> }>();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
  ) {}

  get(schemaId: string | null): Promise<OptionsResult> {
    const key = JSON.stringify(schemaId);
    const now = this.clock.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < OPTIONS_TTL_MS) return hit.result;
    if (this.entries.size > 500) this.entries.clear();
    const result = reportOptions(this.sql, schemaId);
    this.entries.set(key, { at: now, result });
    result.catch(() => this.entries.delete(key));
    return result;
  }
}

export interface Invalid {
  errors: Record<string, string>;
  /** The one-line summary the form flashes. */
  summary: string;
}

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Checks a definition: its shape (TypeBox), a non-blank name unique regardless of case, fields and
 * filter paths among the schema's options, filter values of the field's type, a custom range
 * with from < to. Returns the normalised definition or every problem found.
 */
export async function validateReport(
  sql: Sql,
  input: unknown,
  exceptId?: string,
): Promise<{ name: string; config: ReportConfig } | Invalid> {
  if (!Value.Check(ReportInputSchema, input)) {
    const errors: Record<string, string> = {};
    for (const e of Value.Errors(ReportInputSchema, input)) {
      const key = e.path.replace(/^\//, "").replaceAll("/", ".") || "body";
      errors[key] ??= e.message;
    }
    return { errors, summary: MESSAGES.invalid };
  }
  const errors: Record<string, string> = {};
  let summary: string = MESSAGES.invalid;
  const name = input.name.trim();
  if (name === "") errors.name = MESSAGES.nameBlank;
  else {
    const [taken] = await sql`select 1 from custom_reports where lower(name) = lower(${name})
      ${exceptId ? sql`and id <> ${exceptId}::uuid` : sql``} limit 1`;
    if (taken) {
      errors.name = MESSAGES.nameTaken;
      summary = MESSAGES.nameTakenFlash;
    }
  }
  const raw = input.config;
  const schemaId = raw.schema_id?.trim() || null;
  const options = await reportOptions(sql, schemaId);
  const types = new Map(options.ok ? options.options.map((o) => [o.key, o.value_type]) : []);
  if (!options.ok) {
    errors.schema_id = options.message;
    summary = options.message;
  }
  const fields = raw.fields.map((f, i) => {
    const path = f.path.trim();
    const alias = f.alias?.trim() || path;
    if (options.ok && !types.has(path)) {
      errors[`fields.${i}.path`] = MESSAGES.invalidField;
      summary = MESSAGES.invalidFieldFlash;
    }
    return { path, alias };
  });
  const aliases = new Set<string>();
  fields.forEach((f, i) => {
    if (RESERVED_ALIASES.includes(f.alias.toLowerCase()))
      errors[`fields.${i}.alias`] = MESSAGES.aliasReserved;
    else if (aliases.has(f.alias.toLowerCase())) errors[`fields.${i}.alias`] = MESSAGES.aliasTaken;
    aliases.add(f.alias.toLowerCase());
  });
  const filters: ReportConfig["filters"] = [];
  (raw.filters ?? []).forEach((f, i) => {
    const operator = (f.operator === "==" ? "=" : f.operator) as FilterOperator;
    const fail = (message: string, key = "value") => {
      errors[`filters.${i}.${key}`] = message;
      if (summary === MESSAGES.invalid) summary = MESSAGES.valueType;
    };
    if ((f.field === undefined) === (f.path === undefined || f.path.trim() === "")) {
      fail("Choose either a telemetry column or a field.", "field");
      return;
    }
    if (f.field) {
      const value = String(f.value).trim();
      if (f.field === "device_id" && !isUuid(value)) fail("Value must be a device id (UUID).");
      else if (f.field === "recorded_at" && (!TIME.test(value) || Number.isNaN(Date.parse(value))))
        fail("Value must be an ISO 8601 time such as 2026-01-31T12:00:00Z.");
      else if (!(NUMBER_OPERATORS as readonly string[]).includes(operator))
        fail("This operator does not apply to this column.", "operator");
      else if (f.field === "device_id" && !["=", "!="].includes(operator))
        fail("This operator does not apply to this column.", "operator");
      filters.push({ field: f.field, operator, value });
      return;
    }
    const path = f.path!.trim();
    if (options.ok && !types.has(path)) {
      errors[`filters.${i}.path`] = MESSAGES.invalidField;
      summary = MESSAGES.invalidFieldFlash;
      return;
    }
    if (isNumericType(types.get(path))) {
      const number = typeof f.value === "number" ? f.value : Number(String(f.value).trim());
      if (String(f.value).trim() === "" || !Number.isFinite(number)) fail("Value must be a number.");
      else if (!(NUMBER_OPERATORS as readonly string[]).includes(operator))
        fail("This operator does not apply to numbers.", "operator");
      filters.push({ path, operator, value: number });
    } else {
      if (!(TEXT_OPERATORS as readonly string[]).includes(operator))
        fail("This operator does not apply to text.", "operator");
      else if (typeof f.value !== "string") fail("Value must be text.");
      filters.push({ path, operator, value: String(f.value) });
    }
  });
  const range: ReportConfig["range"] = { preset: raw.range?.preset ?? "24h" };
  if (range.preset === "custom") {
    const from = raw.range?.from ?? "";
    const to = raw.range?.to ?? "";
    if (!TIME.test(from) || !TIME.test(to) || !(Date.parse(from) < Date.parse(to)))
      errors.range = "A custom range needs ISO 8601 UTC times with from before to.";
    else {
      range.from = new Date(from).toISOString();
      range.to = new Date(to).toISOString();
    }
  }
  if (Object.keys(errors).length > 0) return { errors, summary };
  return {
    name,
    config: {
      source: "telemetry",
      schema_id: schemaId,
      fields,
      filters,
      range,
      mode: raw.mode ?? "raw",
      bucket: raw.bucket ?? "1h",
    },
  };
}

type Row = { id: string; name: string; config: ReportConfig; created_at: Date; updated_at: Date };
const toReport = (r: Row): Report => ({
  id: r.id,
  name: r.name,
  config: r.config,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const isInvalid = (v: unknown): v is Invalid => typeof v === "object" && v !== null && "errors" in v;

/** The typed error of an invalid definition (API callers). */
export function invalidReport(invalid: Invalid): AppError {
  return new AppError(422, "invalid_report", invalid.summary, { errors: invalid.errors });
}

function nameRace(error: unknown): Invalid | undefined {
  // Two saves of the same name at once: the unique index decides; same answer as the check.
  if ((error as { code?: string }).code === "23505")
    return { errors: { name: MESSAGES.nameTaken }, summary: MESSAGES.nameTakenFlash };
  return undefined;
}

export async function createReport(sql: Sql, input: unknown): Promise<Report | Invalid> {
  const valid = await validateReport(sql, input);
  if (isInvalid(valid)) return valid;
  try {
    const [row] = await sql<Row[]>`insert into custom_reports (name, config)
      values (${valid.name}, ${JSON.stringify(valid.config)}::jsonb) returning *`;
    return toReport(row!);
  } catch (error) {
    const race = nameRace(error);
    if (race) return race;
    throw error;
  }
}

export async function updateReport(
  sql: Sql,
  id: string,
  input: unknown,
): Promise<Report | Invalid | undefined> {
  if (!(await getReport(sql, id))) return undefined;
  const valid = await validateReport(sql, input, id);
  if (isInvalid(valid)) return valid;
  try {
    const [row] = await sql<Row[]>`update custom_reports set name = ${valid.name},
      config = ${JSON.stringify(valid.config)}::jsonb, updated_at = now() where id = ${id}::uuid returning *`;
    return row ? toReport(row) : undefined;
  } catch (error) {
    const race = nameRace(error);
    if (race) return race;
    throw error;
  }
}

export async function getReport(sql: Sql, id: string): Promise<Report | undefined> {
  if (!isUuid(id)) return undefined;
  const [row] = await sql<Row[]>`select * from custom_reports where id = ${id}::uuid`;
  return row ? toReport(row) : undefined;
}

/** The report or a typed 404 `report_not_found`. */
export async function requireReport(sql: Sql, id: string): Promise<Report> {
  const report = await getReport(sql, id);
  if (!report) throw new AppError(404, "report_not_found", "Report not found");
  return report;
}

/** Deletes a report and every operator's saved view of it. */
export async function deleteReport(sql: Sql, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  return sql.begin(async (tx) => {
    const deleted = await tx`delete from custom_reports where id = ${id}::uuid`;
    await tx`delete from report_view_preferences where view_key = ${`reports:show:${id}`}`;
    return deleted.count > 0;
  });
}

export interface ReportListQuery {
  /** Case-insensitive substring of the name (trimmed). */
  name?: string;
  /** Field paths a report must all contain (compared lowercased). */
  fields?: string[];
  dir?: "asc" | "desc";
}

/** Reports by name (case-insensitive), filtered in SQL. */
export async function listReports(sql: Sql, query: ReportListQuery = {}): Promise<Report[]> {
  const name = query.name?.trim();
  const pattern = name ? `%${name.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined;
  const fields = (query.fields ?? [])
    .map((f) => f.trim().toLowerCase())
    .filter(Boolean)
    .slice(0, 20);
  const rows = await sql<Row[]>`select * from custom_reports where true
    ${pattern ? sql`and name ilike ${pattern}` : sql``}
    ${
      fields.length
        ? fields.map(
            (f) =>
              sql`and exists (select 1 from jsonb_array_elements(config->'fields') x where lower(x->>'path') = ${f})`,
          )
        : sql``
    }
    order by lower(name) ${query.dir === "desc" ? sql`desc` : sql`asc`}, id limit 1000`;
  return rows.map(toReport);
}
