import fs from "node:fs";
import path from "node:path";
import type { ScriptFormatError } from "../../shared/scripts/errors.ts";
import { type ParsedScript, parseScript, validateScriptName } from "../../shared/scripts/frontmatter.ts";
import { writeFileAtomic } from "../fs-atomic.ts";

/** An installed script file. */
export interface InstalledScript extends ParsedScript {
  path: string;
}

export interface InstallResult {
  name: string;
  version: number;
  path: string;
  /** Files of the same script that were replaced (with force). */
  replaced: string[];
}

export class ScriptStoreError extends Error {
  override name = "ScriptStoreError";
}

export interface StoreWarning {
  path: string;
  message: string;
}

/** File name of an installed script: `<name>@v<version>.js`. */
export function scriptFileName(name: string, version: number): string {
  return `${name}@v${version}.js`;
}

/**
 * Installed scripts under one directory. Several versions of a script may be installed; polling runs the
 * latest (highest version) of each name. Files that do not parse are skipped with a warning.
 */
export class ScriptStore {
  /** Parsed files keyed by path, reused while size and mtime are unchanged. */
  private readonly parsed = new Map<string, { mtimeMs: number; size: number; script: ParsedScript }>();

  constructor(readonly dir: string) {}

  private parseFile(file: string): ParsedScript {
    const st = fs.statSync(file);
    const hit = this.parsed.get(file);
    if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.script;
    const script = parseScript(fs.readFileSync(file, "utf8"));
    this.parsed.set(file, { mtimeMs: st.mtimeMs, size: st.size, script });
    return script;
  }

  /** All installed scripts (every version), sorted by name then version. */
  list(warnings: StoreWarning[] = []): InstalledScript[] {
    let entries: string[];
    try {
      entries = fs.readdirSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new ScriptStoreError(`cannot read scripts directory ${this.dir}: ${(err as Error).message}`);
    }
    const scripts: InstalledScript[] = [];
    for (const entry of entries.sort()) {
      if (!entry.endsWith(".js") || entry.startsWith(".")) continue;
      const file = path.join(this.dir, entry);
      try {
        scripts.push({ ...this.parseFile(file), path: file });
      } catch (err) {
        warnings.push({ path: file, message: (err as Error).message });
      }
    }
    return scripts.sort((a, b) => a.meta.name.localeCompare(b.meta.name) || a.meta.version - b.meta.version);
  }

  /** The latest version of each installed script, sorted by name. */
  latest(warnings: StoreWarning[] = []): InstalledScript[] {
    const byName = new Map<string, InstalledScript>();
    for (const script of this.list(warnings)) {
      const current = byName.get(script.meta.name);
      if (!current || script.meta.version > current.meta.version) byName.set(script.meta.name, script);
    }
    return [...byName.values()].sort((a, b) => a.meta.name.localeCompare(b.meta.name));
  }

  /** Latest installed version of a name, or null. */
  find(name: string): InstalledScript | null {
    return this.latest().find((s) => s.meta.name === name) ?? null;
  }

  /**
   * Install script text. Its version must be higher than every installed version of the same name,
   * unless `force` (then all installed versions of that name are replaced).
   */
  install(text: string, options: { force?: boolean } = {}): InstallResult {
    const parsed = parseScript(text);
    const { name, version } = parsed.meta;
    const existing = this.list().filter((s) => s.meta.name === name);
    const highest = existing.reduce((max, s) => Math.max(max, s.meta.version), -1);
    if (!options.force && highest >= 0 && version <= highest) {
      throw new ScriptStoreError(
        `version must be greater than v${highest} (installed); use force to overwrite`,
      );
    }
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o750 });
    const target = path.join(this.dir, scriptFileName(name, version));
    writeFileAtomic(target, text.endsWith("\n") ? text : `${text}\n`, { mode: 0o644, dirMode: 0o750 });
    const replaced: string[] = [];
    if (options.force) {
      for (const old of existing) {
        if (old.path === target) {
          replaced.push(old.path);
          continue;
        }
        fs.rmSync(old.path, { force: true });
        replaced.push(old.path);
      }
    }
    return { name, version, path: target, replaced };
  }

  /** Remove every version of a script (or just one version). Returns the removed scripts. */
  remove(name: string, version?: number): InstalledScript[] {
    try {
      validateScriptName(name);
    } catch (err) {
      throw new ScriptStoreError((err as ScriptFormatError).message);
    }
    const matching = this.list().filter(
      (s) => s.meta.name === name && (version === undefined || s.meta.version === version),
    );
    if (matching.length === 0) {
      throw new ScriptStoreError(
        version === undefined ? `script not found: ${name}` : `script not found: ${name} v${version}`,
      );
    }
    for (const script of matching) fs.rmSync(script.path, { force: true });
    return matching;
  }
}
