import { ScriptFormatError } from "../../shared/scripts/errors.ts";
import { parseVersion } from "../../shared/scripts/frontmatter.ts";
import { ScriptStoreError } from "../scripts/store.ts";
import { CommandFailure, type CommandHandler, commandFields, positionalArgs } from "./types.ts";

/** `list_scripts` → `{scripts:[{name, version, path, active}]}` (every installed version). */
export const listScripts: CommandHandler = async (_command, ctx) => {
  const latest = new Set(ctx.store.latest().map((s) => s.path));
  return {
    scripts: ctx.store
      .list()
      .map((s) => ({ name: s.meta.name, version: s.meta.version, path: s.path, active: latest.has(s.path) })),
  };
};

function truthy(value: unknown): boolean {
  return value === true || value === "true" || value === 1 || value === "1";
}

/**
 * `install_script`: the payload is the script text, or an object whose `data` (or `script`/`content`)
 * is the text. Force comes from `payload.force`, `args.force` or a positional "force"/"--force".
 */
export const installScript: CommandHandler = async (command, ctx) => {
  const payload = command.payload;
  let text: unknown = payload;
  let force = false;
  if (payload && typeof payload === "object" && !Array.isArray(payload)) {
    const p = payload as Record<string, unknown>;
    text = p.data ?? p.script ?? p.content ?? p.text;
    force = truthy(p.force);
  }
  const args = command.args;
  if (args && typeof args === "object" && !Array.isArray(args))
    force ||= truthy((args as Record<string, unknown>).force);
  if (positionalArgs(command).some((a) => a === "force" || a === "--force")) force = true;
  if (typeof text !== "string" || text.trim() === "") throw new CommandFailure("missing script content");
  try {
    const result = ctx.store.install(text, { force });
    return { name: result.name, version: result.version, path: result.path, replaced: result.replaced };
  } catch (err) {
    if (err instanceof ScriptFormatError || err instanceof ScriptStoreError)
      throw new CommandFailure(err.message);
    throw err;
  }
};

/**
 * `remove_script`: name from `args.name`/`payload.name`/`args[0]`; optional version from `args.version`/`args[1]`.
 * Output `{name, version, removed: [{version, path}]}`: `version` is the version asked for, or the highest
 * one removed when every version was.
 */
export const removeScript: CommandHandler = async (command, ctx) => {
  const fields = commandFields(command);
  const positional = positionalArgs(command);
  const name = fields.name ?? positional[0];
  const rawVersion = fields.version ?? positional[1];
  if (typeof name !== "string" || name === "") throw new CommandFailure("missing name");
  let version: number | undefined;
  if (rawVersion !== undefined && rawVersion !== null && rawVersion !== "") {
    try {
      version = parseVersion(rawVersion);
    } catch (err) {
      throw new CommandFailure((err as Error).message);
    }
  }
  try {
    const removed = ctx.store.remove(name, version);
    return {
      name,
      version: version ?? Math.max(...removed.map((s) => s.meta.version)),
      removed: removed.map((s) => ({ version: s.meta.version, path: s.path })),
    };
  } catch (err) {
    if (err instanceof ScriptStoreError) throw new CommandFailure(err.message);
    throw err;
  }
};
