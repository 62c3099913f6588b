// Each error code the code base raises has one HTTP status, and docs/errors.md lists it with that
// status: a client may switch on either, and a new code cannot ship undocumented.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "../..");

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => /\.tsx?$/.test(file))
    .map((file) => path.join(ROOT, dir, file));
}

/** code → statuses, from `new AppError(status, "code"` and the helpers in modules/platform/errors.ts. */
function raisedCodes(): Map<string, Set<number>> {
  const codes = new Map<string, Set<number>>();
  const add = (code: string, status: number) => codes.set(code, (codes.get(code) ?? new Set()).add(status));
  for (const file of [...sourceFiles("modules"), ...sourceFiles("cli"), path.join(ROOT, "app.ts")]) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/AppError\(\s*(\d{3}),\s*"([a-z_]+)"/g))
      add(match[2]!, Number(match[1]));
    for (const match of text.matchAll(/status:\s*(\d{3}),\s*code:\s*"([a-z_]+)"/g))
      add(match[2]!, Number(match[1]));
    for (const match of text.matchAll(/notFound\([^)]*?,\s*"([a-z_]+)"\)/g)) add(match[1]!, 404);
  }
  return codes;
}

function documentedCodes(): Map<string, number> {
  const doc = readFileSync(path.join(ROOT, "docs/errors.md"), "utf8");
  return new Map([...doc.matchAll(/^\| `([a-z_]+)` +\| (\d{3}) +\|/gm)].map((m) => [m[1]!, Number(m[2])]));
}

test("the scan finds the codes it is meant to find", () => {
  const raised = raisedCodes();
  // Raised through the helpers, a multi-line constructor and the 500 handler.
  for (const code of ["invalid_request", "environment_locked", "internal_error", "unknown_task"]) {
    expect({ code, found: raised.has(code) }).toEqual({ code, found: true });
  }
});

test("every code has one status and is documented with it", () => {
  const documented = documentedCodes();
  const problems: string[] = [];
  for (const [code, statuses] of raisedCodes()) {
    if (statuses.size > 1) problems.push(`${code} is raised with ${[...statuses].join(" and ")}`);
    const status = [...statuses][0]!;
    if (!documented.has(code)) problems.push(`${code} (${status}) is missing from docs/errors.md`);
    else if (documented.get(code) !== status)
      problems.push(`${code} is ${status} but docs/errors.md says ${documented.get(code)}`);
  }
  expect(problems).toEqual([]);
});

test("docs/errors.md lists no code the code base no longer raises", () => {
  const raised = raisedCodes();
  expect([...documentedCodes().keys()].filter((code) => !raised.has(code))).toEqual([]);
});
