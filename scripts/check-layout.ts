/**
 * Fails when an import breaks the layout CONTRIBUTING.md describes:
 * - `ui/` is the kit: it imports only `ui/` and `modules/platform`;
 * - a feature, a job task in `jobs/` and the CLI enter a feature only through its door: the
 *   `service.ts` (`index.ts` where it has no service) and the `model.ts` of types and schemas; `modules/platform` is the shared base, not a
 *   feature (a table may still reference another feature's table for a foreign key, `schema.ts` to `schema.ts`);
 * - app.ts and cli/ (the composition roots) may also mount a feature's routes, never its pages,
 *   page queries or tables;
 * - server code never imports `agent/`, the agent never imports server code: what both speak lives
 *   in `shared/`, which imports only itself (so the agent build pulls in no server module);
 * - features do not import each other in a cycle, and neither do `modules/jobs` and the task files
 *   in `jobs/` (the composition root, app.ts, hands the task list to the job runner).
 * Run by `npm run check`; `bun scripts/check-layout.ts --graph` prints the feature graph.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "..");
const SCANNED = ["app.ts", "cli", "jobs", "modules", "ui", "agent", "shared"];
const SERVER = /^(app\.ts$|cli\/|jobs\/|modules\/|ui\/)/;
/** Static, type-only, re-export, side-effect and dynamic imports alike: a type import is a dependency too. */
const IMPORT =
  /(?:^|[\s;])(?:import|export)\s(?:[^;"'`]*?\sfrom\s*)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

/** A feature's door: the only files of it another feature may import. */
const DOOR = /^(service|index|model)\.ts$/;
/** Feature-private files: not even the composition roots import them. */
const PRIVATE = [/^pages(\/|\.tsx$)/, /^queries\.ts$/, /^routes\.tsx?$/, /^schema\.ts$/];

interface Edge {
  from: string;
  to: string;
}

function sourceFiles(entry: string): string[] {
  const full = path.join(ROOT, entry);
  if (statSync(full).isFile()) return /\.tsx?$/.test(entry) ? [entry] : [];
  return readdirSync(full).flatMap((name) => sourceFiles(path.join(entry, name)));
}

function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined; // packages
  const base = path.normalize(path.join(path.dirname(from), specifier));
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`, `${base}/index.tsx`]) {
    try {
      if (statSync(path.join(ROOT, candidate)).isFile()) return candidate;
    } catch {}
  }
  return base;
}

/** `modules/devices/pages/detail.tsx` → { feature: "devices", inner: "pages/detail.tsx" }. */
function featureOf(file: string): { feature: string; inner: string } | undefined {
  const match = /^modules\/([^/]+)\/(.+)$/.exec(file);
  return match ? { feature: match[1]!, inner: match[2]! } : undefined;
}

export function layoutViolations(edges: Edge[]): string[] {
  const problems: string[] = [];
  const featureEdges = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const source = featureOf(from);
    const target = featureOf(to);
    if (from.startsWith("ui/") && !to.startsWith("ui/") && target?.feature !== "platform") {
      problems.push(`${from} imports ${to}: the ui kit may import only ui/ and modules/platform`);
    }
    if (from.startsWith("modules/jobs/") && to.startsWith("jobs/")) {
      problems.push(`${from} imports ${to}: app.ts hands the task list to the job runner`);
    }
    if (SERVER.test(from) && to.startsWith("agent/")) {
      problems.push(`${from} imports ${to}: server code never imports the agent; share it through shared/`);
    }
    if (from.startsWith("agent/") && !to.startsWith("agent/") && !to.startsWith("shared/")) {
      problems.push(`${from} imports ${to}: the agent imports only agent/ and shared/`);
    }
    if (from.startsWith("shared/") && !to.startsWith("shared/")) {
      problems.push(
        `${from} imports ${to}: shared/ imports only shared/ (both the agent and the server use it)`,
      );
    }
    if (!target || target.feature === "platform" || from === "modules/schema.ts") continue;
    if (source?.feature === target.feature) continue;
    const foreignKey = /(^|\/)schema\.ts$/.test(from) && target.inner === "schema.ts";
    // Job tasks and the CLI enter features through their doors too; the E2E runner is a client program
    // of its own that the CLI loads lazily (`outpost e2e run`), not a part of the server's feature.
    const outsider =
      from.startsWith("jobs/") || (from.startsWith("cli/") && !target.inner.startsWith("runner/"));
    if ((source || outsider) && !DOOR.test(target.inner) && !foreignKey) {
      const door = `modules/${target.feature}/service.ts (or index.ts) and model.ts`;
      problems.push(`${from} imports ${to}: another feature is entered through its door, ${door}`);
    }
    const composer = from === "app.ts" || from.startsWith("cli/");
    const privateFile = PRIVATE.some((pattern) => pattern.test(target.inner));
    if (!source && privateFile && !(composer && /(^|\/)routes\.tsx?$/.test(target.inner))) {
      problems.push(`${from} imports ${to}: another feature's ${target.inner} is private to it`);
    }
    if (source) {
      const set = featureEdges.get(source.feature) ?? new Set<string>();
      set.add(target.feature);
      featureEdges.set(source.feature, set);
    }
  }
  for (const cycle of featureCycles(featureEdges)) {
    problems.push(`features import each other in a cycle: ${cycle.join(" → ")}`);
  }
  return problems;
}

function featureCycles(graph: Map<string, Set<string>>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, "active" | "done">();
  const stack: string[] = [];
  function visit(node: string) {
    state.set(node, "active");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "active") cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  }
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

export function collectEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const file of SCANNED.flatMap(sourceFiles)) {
    const code = readFileSync(path.join(ROOT, file), "utf8");
    for (const match of code.matchAll(IMPORT)) {
      const to = resolveImport(file, (match[1] ?? match[2])!);
      if (to) edges.push({ from: file, to });
    }
  }
  return edges;
}

if (import.meta.main) {
  const edges = collectEdges();
  if (process.argv.includes("--graph")) {
    const pairs = new Set<string>();
    for (const { from, to } of edges) {
      const a = featureOf(from)?.feature;
      const b = featureOf(to)?.feature;
      if (a && b && a !== b && b !== "platform") pairs.add(`${a} → ${b}`);
    }
    console.log([...pairs].sort().join("\n"));
  }
  const problems = layoutViolations(edges);
  if (problems.length > 0) {
    console.error(`check-layout: ${problems.length} import(s) break the layout (CONTRIBUTING.md, "Layout"):`);
    for (const problem of problems) console.error(`  ${problem}`);
    process.exit(1);
  }
  console.log(`check-layout: ${edges.length} imports follow the layout`);
}
