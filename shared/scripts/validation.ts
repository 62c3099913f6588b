import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { ScriptFormatError } from "./errors.ts";

let ajv: Ajv | null = null;

/** Created on first use, so commands that never validate output start faster. */
function getAjv(): Ajv {
  if (!ajv) {
    ajv = new Ajv({ allErrors: true, strict: false, validateSchema: true });
    addFormats(ajv);
  }
  return ajv;
}

const cache = new Map<string, ValidateFunction>();

/** Compile (and cache) a script's output schema; throws ScriptFormatError if it is not a valid schema. */
export function compileOutputSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = cache.get(key);
  if (hit) return hit;
  let validate: ValidateFunction;
  try {
    validate = getAjv().compile(schema);
  } catch (err) {
    throw new ScriptFormatError(`front-matter schema is not a valid JSON Schema: ${(err as Error).message}`);
  }
  if (cache.size > 500) cache.clear();
  cache.set(key, validate);
  return validate;
}

/** Readable validation report lines (simple and verbose forms), one per error. */
export interface ValidationReport {
  simple: string;
  verbose: string;
  lines: string[];
}

function dotted(instancePath: string, missing?: string): string {
  const parts = instancePath.split("/").filter(Boolean);
  if (missing) parts.push(missing);
  return parts.length ? parts.join(".") : "(root)";
}

function describe(error: ErrorObject): { path: string; message: string } {
  if (error.keyword === "required") {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return { path: dotted(error.instancePath, missing), message: "required field missing" };
  }
  if (error.keyword === "type") {
    return {
      path: dotted(error.instancePath),
      message: `expected ${(error.params as { type: string }).type}`,
    };
  }
  if (error.keyword === "additionalProperties") {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return { path: dotted(error.instancePath, extra), message: "unexpected field" };
  }
  return { path: dotted(error.instancePath), message: error.message ?? error.keyword };
}

export function formatValidationErrors(errors: ErrorObject[]): ValidationReport {
  const simple: string[] = [];
  const verbose: string[] = [];
  for (const error of errors.slice(0, 50)) {
    const { path, message } = describe(error);
    simple.push(`❌ ${path}: ${message}`);
    verbose.push(`❌ ${path}: ${message} (keyword: ${error.keyword}, schema: ${error.schemaPath})`);
  }
  return { simple: simple.join("\n"), verbose: verbose.join("\n"), lines: simple };
}
