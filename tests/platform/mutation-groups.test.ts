// The mutation groups name real code: every file and declaration they mutate and every test file they
// run exists, so a rename or a move fails here, not hours into a mutation run; and they name code by
// declaration, never by line numbers (which drift onto other code with every edit above them).
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import path from "node:path";
import { GROUPS } from "../../scripts/mutation-groups";
import { resolveMutateEntry, sourceDeclarations } from "../../scripts/mutation-ranges";

const ROOT = path.resolve(import.meta.dir, "../..");

describe("mutation groups", () => {
  test("every entry resolves to code that exists, by name; every test file exists", () => {
    for (const [group, { mutate, tests }] of Object.entries(GROUPS)) {
      for (const entry of mutate) {
        expect({ group, entry, lineRange: /:\d+-\d+$/.test(entry) }).toEqual({
          group,
          entry,
          lineRange: false,
        });
        for (const resolved of resolveMutateEntry(entry, ROOT)) {
          const file = resolved.replace(/:\d+-\d+$/, "");
          expect({ group, file, exists: existsSync(path.join(ROOT, file)) }).toEqual({
            group,
            file,
            exists: true,
          });
        }
      }
      for (const file of tests)
        expect({ group, file, exists: existsSync(path.join(ROOT, file)) }).toEqual({
          group,
          file,
          exists: true,
        });
    }
  });
});

describe("declarations by name", () => {
  const text = [
    "const LIMIT = 3;", // 1
    "/** Why. */", // 2
    "export function first(a: number) {", // 3
    "  const inner = a + LIMIT;", // 4
    "  return inner;", // 5
    "}", // 6
    "class Gate {", // 7
    "  allows(x: number) {", // 8
    "    return x > 1;", // 9
    "  }", // 10
    "}", // 11
    "export function pages() {", // 12
    "  return { html() { return 1; }, flash: 2 };", // 13
    "}", // 14
  ].join("\n");
  const declarations = sourceDeclarations("example.ts", text);

  test("top level (without its comment), a class member, a function's const, an object's method", () => {
    expect(declarations.span("LIMIT")).toEqual({ from: 1, to: 1 });
    expect(declarations.span("first")).toEqual({ from: 3, to: 6 });
    expect(declarations.span("first.inner")).toEqual({ from: 4, to: 4 });
    expect(declarations.span("Gate.allows")).toEqual({ from: 8, to: 10 });
    expect(declarations.span("pages.html")).toEqual({ from: 13, to: 13 });
    expect(declarations.names).toEqual(["LIMIT", "first", "Gate", "pages"]);
  });

  test("a parameter is not a declaration to mutate; an unknown name is undefined", () => {
    expect(declarations.span("first.a")).toBeUndefined();
    expect(declarations.span("missing")).toBeUndefined();
    expect(declarations.span("Gate.missing")).toBeUndefined();
  });

  test("entries: whole files, lists and first..last ranges; a missing name or a reversed range fails clearly", () => {
    expect(resolveMutateEntry("modules/platform/csv.ts", ROOT)).toEqual(["modules/platform/csv.ts"]);
    const [range] = resolveMutateEntry("modules/audit/service.ts#pruneAudit", ROOT);
    expect(range).toMatch(/^modules\/audit\/service\.ts:\d+-\d+$/);
    const [from, to] = range!.split(":")[1]!.split("-").map(Number);
    expect(to! >= from!).toBe(true);
    expect(() => resolveMutateEntry("modules/audit/service.ts#noSuchThing", ROOT)).toThrow(
      /has no declaration "noSuchThing" \(top level: .*pruneAudit/,
    );
    const spans = resolveMutateEntry("modules/commands/service.ts#queueCommand,cancelCommand", ROOT);
    expect(spans).toHaveLength(2);
    expect(() => resolveMutateEntry("modules/commands/service.ts#cancelCommand..queueCommand", ROOT)).toThrow(
      /comes before/,
    );
  });
});
