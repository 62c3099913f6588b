/**
 * Fails when per-process state comes back as a module-level registry: a `Map`, `WeakMap`, `Set` or
 * `WeakSet` declared at the top of a module and keyed by a config, a database connection or any object
 * (the way a second app in one process, e.g. a test's, silently shared or missed it). Such state
 * belongs to a service built once by `createServices` (services.ts) and handed around in the app
 * context. State kept per request (`WeakMap<Request, …>`) is not a registry. Run by `npm run check`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "..");
const SCANNED = ["app.ts", "services.ts", "cli", "jobs", "modules", "ui"];
/**
 * What such a registry is keyed by: any object type (a config, a connection, a service instance) but
 * a request; strings and numbers are plain caches of values (file digests, constants).
 */
const REGISTRY_KEY = /^(object\b|(?!Request\b)[A-Z])/;
/** A declaration at the top level of a module (not indented): `const x = new WeakMap<K, V>(`. */
const DECLARATION =
  /^(?:export\s+)?(?:const|let|var)\s+(\w+)(?:\s*:[^=]+)?\s*=\s*new\s+(WeakMap|Map|WeakSet|Set)\s*(?:<\s*([^,>]+))?/gm;
/** Reviewed exceptions: file → declaration, with why it is no registry. */
const ALLOWED: Record<string, string[]> = {
  // Marks parsed request bodies (the objects themselves), dropped with them.
  "modules/platform/text-input.ts": ["storableJson"],
};

function sourceFiles(entry: string): string[] {
  const full = path.join(ROOT, entry);
  if (statSync(full).isFile()) return /\.tsx?$/.test(entry) ? [entry] : [];
  return readdirSync(full).flatMap((name) => sourceFiles(path.join(entry, name)));
}

/** The registries declared in one file's text. */
export function registriesIn(file: string, text: string): string[] {
  const problems: string[] = [];
  for (const match of text.matchAll(DECLARATION)) {
    const [, name, kind, key] = match;
    const keyType = key?.trim();
    if (keyType === undefined ? kind!.startsWith("Weak") : REGISTRY_KEY.test(keyType)) {
      if (ALLOWED[file]?.includes(name!)) continue;
      const line = text.slice(0, match.index).split("\n").length;
      problems.push(
        `${file}:${line}: module-level ${kind}<${keyType ?? "?"}> "${name}": per-process state belongs to a service built by createServices (services.ts)`,
      );
    }
  }
  return problems;
}

export function registryViolations(): string[] {
  return SCANNED.flatMap(sourceFiles).flatMap((file) =>
    registriesIn(file, readFileSync(path.join(ROOT, file), "utf8")),
  );
}

if (import.meta.main) {
  const problems = registryViolations();
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) process.exit(1);
  console.log("no module-level registries");
}
