// Telemetry schemas as the agent builds them (agent/telemetry.ts) from the scripts it has installed:
// consumers (builder, reports, alert rules) are tested with what the producer really announces.
import { BUILTIN_SCRIPT_SOURCES } from "../../agent/builtin-scripts/index.ts";
import { parseScript } from "../../agent/scripts/frontmatter.ts";
import type { InstalledScript } from "../../agent/scripts/store.ts";
import { buildSchemaDefinition, type SchemaDefinition } from "../../agent/telemetry.ts";
import { scriptText } from "../agent/helpers";

/** An installed script whose output schema has `fields` (field name → JSON Schema type). */
export function agentScript(name: string, version: number, fields: Record<string, string>): InstalledScript {
  const properties = Object.entries(fields)
    .map(([field, type]) => `  ${field}: { type: ${type} }`)
    .join("\n");
  const text = scriptText(
    name,
    version,
    "function main() { return {}; }",
    `type: object\nproperties:\n${properties}`,
  );
  return { ...parseScript(text), path: "" };
}

/** The agent's built-in scripts (cpu, memory, disk, load, uptime, network), as installed. */
export function builtinScripts(): InstalledScript[] {
  return BUILTIN_SCRIPT_SOURCES.map((source) => ({ ...parseScript(source), path: "" }));
}

/** The schema definition the agent announces for `product` with these scripts installed. */
export function agentSchema(product: string, scripts: InstalledScript[]): SchemaDefinition {
  return buildSchemaDefinition(product, scripts);
}
