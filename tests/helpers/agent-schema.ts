// Telemetry schemas as the agent announces them for a set of installed scripts (ScriptedAgent installs
// them in the agent's own store and builds the schema with its buildSchemaDefinition), for tests that
// only need the schema: the builder, rules and reports over devices that run different script sets.
import type { SchemaDefinition } from "../../agent/telemetry.ts";
import { type AgentScript, ScriptedAgent } from "./agent-telemetry";

/** A script whose output has `fields` (field name → JSON Schema type). */
export function fieldsScript(name: string, fields: Record<string, string>): AgentScript {
  const properties = Object.fromEntries(Object.entries(fields).map(([field, type]) => [field, { type }]));
  return { name, schema: { type: "object", properties } };
}

/**
 * The schema an agent of `product` announces with `scripts` installed (and its built-in scripts, with
 * `builtins`); its files go to a new directory under `parent` (a test app's data directory).
 */
export function announcedSchema(
  parent: string,
  product: string,
  scripts: AgentScript[],
  options: { builtins?: boolean } = {},
): SchemaDefinition {
  return new ScriptedAgent(parent, product, scripts, options).schema();
}
