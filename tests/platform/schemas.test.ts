import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { compileSchema, firstInvalidField } from "../../modules/platform/schemas";

const schema = compileSchema(
  Type.Object({
    a: Type.String(),
    nested: Type.Object({ x: Type.Optional(Type.Number()), y: Type.Optional(Type.Number()) }),
    b: Type.Optional(Type.Array(Type.String())),
  }),
);
const FIELDS = ["a", "nested", "nested.x", "nested.y", "b"];

describe("firstInvalidField", () => {
  test("a valid value has none", () => {
    expect(firstInvalidField(schema, { a: "", nested: {} }, FIELDS)).toBeUndefined();
  });

  test('a value of the wrong type is the root ("")', () => {
    expect(firstInvalidField(schema, [], FIELDS)).toBe("");
    expect(firstInvalidField(schema, null, FIELDS)).toBe("");
  });

  test("the order of the list wins over TypeBox's (missing before wrong)", () => {
    // TypeBox reports the missing `nested` first; the list puts `a` first.
    expect(firstInvalidField(schema, { a: 1 }, FIELDS)).toBe("a");
    expect(firstInvalidField(schema, { a: "", nested: { y: "1", x: "1" } }, FIELDS)).toBe("nested.x");
  });

  test("nested paths match the most specific listed field; array items their list", () => {
    expect(firstInvalidField(schema, { a: "", nested: { y: "1" } }, FIELDS)).toBe("nested.y");
    expect(firstInvalidField(schema, { a: "", nested: 3 }, FIELDS)).toBe("nested");
    expect(firstInvalidField(schema, { a: "", nested: {}, b: ["ok", 2] }, FIELDS)).toBe("b");
  });

  test("errors in fields not listed are not reported", () => {
    expect(firstInvalidField(schema, { a: "", nested: { x: "1" } }, ["a", "b"])).toBeUndefined();
  });
});
