import { describe, expect, test } from "bun:test";
import { parseScript, parseVersion } from "../../shared/scripts/frontmatter.ts";
import { scriptText } from "./helpers.ts";

const body = "function main() { return { ok: true }; }";

describe("script front matter", () => {
  test("CRLF line endings (a browser's pasted text) parse like LF, and the source comes back with LF", () => {
    const text = scriptText("pasted", 2, body, "type: object\nproperties:\n  ok: { type: boolean }");
    const parsed = parseScript(text.replaceAll("\n", "\r\n"));
    expect(parsed.meta).toEqual({
      name: "pasted",
      version: 2,
      schema: { type: "object", properties: { ok: { type: "boolean" } } },
    });
    expect(parsed.source).toBe(text);
  });

  test("parses name, version and schema; source keeps the front matter as a comment", () => {
    const text = scriptText(
      "temps",
      "v3",
      body,
      "type: object\nrequired: [ok]\nproperties:\n  ok: { type: boolean }",
    );
    const parsed = parseScript(text);
    expect(parsed.meta.name).toBe("temps");
    expect(parsed.meta.version).toBe(3);
    expect(parsed.meta.schema).toEqual({
      type: "object",
      required: ["ok"],
      properties: { ok: { type: "boolean" } },
    });
    expect(parsed.source.startsWith("/*---")).toBe(true);
  });

  test("versions: 3, '3', 'v3', 'V3' are 3; absent is 0; negative or words are refused", () => {
    expect(parseVersion(3)).toBe(3);
    expect(parseVersion("3")).toBe(3);
    expect(parseVersion("v3")).toBe(3);
    expect(parseVersion("V3")).toBe(3);
    expect(parseVersion(undefined)).toBe(0);
    expect(() => parseVersion(-1)).toThrow(/non-negative integer/);
    expect(() => parseVersion("three")).toThrow(/non-negative integer/);
    expect(() => parseVersion(1.5)).toThrow(/non-negative integer/);
  });

  const cases: [string, string, RegExp][] = [
    ["no front matter", body, /must start with a front-matter block comment/],
    ["unterminated", "/*---\nname: x\nschema: {type: object}\n", /terminator "---\*\/" not found/],
    ["missing name", "/*---\nversion: 1\nschema: {type: object}\n---*/\nfunction main(){}", /missing name/],
    [
      "bad name",
      "/*---\nname: ../etc\nschema: {type: object}\n---*/\nfunction main(){}",
      /invalid script name/,
    ],
    ["missing schema", "/*---\nname: x\nversion: 1\n---*/\nfunction main(){}", /missing schema/],
    ["schema not an object", "/*---\nname: x\nschema: [1]\n---*/\nfunction main(){}", /JSON Schema object/],
    [
      "schema for non-object",
      "/*---\nname: x\nschema: {type: string}\n---*/\nfunction main(){}",
      /describe an object/,
    ],
    [
      "invalid JSON schema",
      "/*---\nname: x\nschema: {type: object, properties: {a: {type: 12}}}\n---*/\nfunction main(){}",
      /not a valid JSON Schema/,
    ],
    ["invalid YAML", "/*---\nname: [x\nschema: {}\n---*/\nfunction main(){}", /not valid YAML/],
    ["front matter is a list", "/*---\n- a\n---*/\nfunction main(){}", /YAML mapping/],
    [
      "bad version",
      "/*---\nname: x\nversion: -2\nschema: {type: object}\n---*/\nfunction main(){}",
      /version/,
    ],
    ["no main", "/*---\nname: x\nschema: {type: object}\n---*/\nconst y = 1;", /does not define main/],
    ["text after opener", "/*--- name: x\nschema: {}\n---*/\nfunction main(){}", /alone on the first line/],
  ];
  for (const [label, text, message] of cases) {
    test(`refuses: ${label}`, () => {
      expect(() => parseScript(text)).toThrow(message);
    });
  }

  test("a YAML error is one whole sentence: its position, no dangling colon or source excerpt", () => {
    expect(() =>
      parseScript("/*---\nname: x\nversion: 1 2: 3\nschema: {}\n---*/\nfunction main(){}"),
    ).toThrow(
      "front-matter is not valid YAML: Nested mappings are not allowed in compact mappings at line 2, column 10",
    );
    expect(() => parseScript("/*---\nname: x\nversion: 1 2: 3\n---*/\nfunction main(){}")).toThrow(
      /^front-matter is not valid YAML: [^\n]*column 10$/,
    );
  });

  test("a leading BOM and blank lines before the opener are accepted", () => {
    expect(parseScript(`\uFEFF\n\n${scriptText("x", 1, body)}`).meta.name).toBe("x");
  });
});
