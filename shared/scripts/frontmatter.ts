import YAML from "yaml";
import { ScriptFormatError } from "./errors.ts";
import { compileOutputSchema } from "./validation.ts";

export { ScriptFormatError };

/** Metadata from a script's front matter. */
export interface ScriptMeta {
  name: string;
  /** Numeric version used for ordering ("v3", "3" and 3 all mean 3; absent means 0). */
  version: number;
  schema: Record<string, unknown>;
  description?: string;
}

/** A parsed plugin script: metadata plus the full source (the front matter is a JS comment). */
export interface ParsedScript {
  meta: ScriptMeta;
  source: string;
}

/**
 * The one rule for a script's name, for the agent (which stores a script under its name) and the
 * server (which refuses at once what the agent would refuse): a letter or digit, then letters,
 * digits, "_", "." or "-", at most SCRIPT_NAME_MAX characters, never "..".
 */
export const SCRIPT_NAME_MAX = 64;
export const SCRIPT_NAME_RE = new RegExp(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,${SCRIPT_NAME_MAX - 1}}$`);
const OPEN = "/*---";
const CLOSE = "---*/";

/** Parse a version: integer ≥ 0, or a string like "3" / "v3" / "V3". Absent → 0. */
export function parseVersion(raw: unknown): number {
  if (raw === undefined || raw === null || raw === "") return 0;
  if (typeof raw === "number" && Number.isSafeInteger(raw) && raw >= 0) return raw;
  if (typeof raw === "string" && /^[vV]?\d{1,9}$/.test(raw.trim()))
    return Number(raw.trim().replace(/^[vV]/, ""));
  throw new ScriptFormatError(
    `front-matter version must be a non-negative integer such as 3 or "v3", got ${JSON.stringify(raw)}`,
  );
}

export function validateScriptName(name: unknown): string {
  if (typeof name !== "string" || name.trim() === "")
    throw new ScriptFormatError("front-matter missing name");
  if (!SCRIPT_NAME_RE.test(name) || name.includes("..")) {
    throw new ScriptFormatError(
      `invalid script name "${name}" (letters, digits, "_", "." and "-"; at most ${SCRIPT_NAME_MAX} characters)`,
    );
  }
  return name;
}

/**
 * Parse a script: it must open (after an optional BOM and blank lines) with `/*---`, carry YAML up to a
 * line `---*\/`, and the YAML must define `name`, optional `version` and `schema` (a JSON Schema object
 * that compiles). The schema is compiled here so broken schemas are refused at install time. The
 * returned source has LF line endings whatever the input had.
 */
export function parseScript(text: string): ParsedScript {
  // Browsers submit pasted text with CRLF; a stray CR would end up inside the YAML values.
  const source = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  const start = source.search(/\S/);
  if (start < 0 || !source.startsWith(OPEN, start)) {
    throw new ScriptFormatError(`script must start with a front-matter block comment "${OPEN}"`);
  }
  const afterOpen = source.indexOf("\n", start);
  if (afterOpen < 0 || source.slice(start + OPEN.length, afterOpen).trim() !== "") {
    throw new ScriptFormatError(`"${OPEN}" must be alone on the first line`);
  }
  const lines = source.slice(afterOpen + 1).split("\n");
  const closeIndex = lines.findIndex((l) => l.trim() === CLOSE);
  if (closeIndex < 0) throw new ScriptFormatError(`front-matter terminator "${CLOSE}" not found`);
  const yamlText = lines.slice(0, closeIndex).join("\n");
  if (yamlText.includes("*/")) throw new ScriptFormatError('front matter must not contain "*/"');
  let data: unknown;
  try {
    data = YAML.parse(yamlText);
  } catch (err) {
    // The yaml package's message ends its first line with a colon before a source excerpt.
    const reason = (err as Error).message.split("\n")[0]!.replace(/:\s*$/, "");
    throw new ScriptFormatError(`front-matter is not valid YAML: ${reason}`);
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new ScriptFormatError("front-matter must be a YAML mapping with name, version and schema");
  }
  const fm = data as Record<string, unknown>;
  const name = validateScriptName(fm.name);
  const version = parseVersion(fm.version);
  if (fm.schema === undefined || fm.schema === null)
    throw new ScriptFormatError("front-matter missing schema");
  if (typeof fm.schema !== "object" || Array.isArray(fm.schema)) {
    throw new ScriptFormatError("front-matter schema must be a JSON Schema object");
  }
  const schema = fm.schema as Record<string, unknown>;
  if (schema.type !== undefined && schema.type !== "object") {
    throw new ScriptFormatError("front-matter schema must describe an object (type: object)");
  }
  compileOutputSchema(schema);
  const body = lines.slice(closeIndex + 1).join("\n");
  if (!/\bmain\b/.test(body)) throw new ScriptFormatError("script does not define main()");
  const meta: ScriptMeta = { name, version, schema };
  if (typeof fm.description === "string") meta.description = fm.description;
  return { meta, source };
}
