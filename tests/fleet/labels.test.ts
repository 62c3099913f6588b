// The label rules shared by the agent, the device API and the console (shared/labels.ts): the key and
// value charsets, the lengths at and over their limits, the most labels per device, and which problem
// a set of labels reports.
import { describe, expect, test } from "bun:test";
import {
  LABEL_TEXT_MAX,
  LABEL_VALUE_MAX,
  LABELS_PER_DEVICE_MAX,
  labelKeyProblem,
  labelsProblem,
  labelValueProblem,
} from "../../shared/labels";

const KEY_PROBLEM =
  "must be 1 to 63 characters: lower-case letters, digits and . _ / -, starting with a letter or digit";
const VALUE_TOO_LONG = "must be at most 128 characters";
const NOT_PRINTABLE = "must be printable ASCII characters, without spaces at either end";

describe("keys", () => {
  for (const key of ["a", "0", "hw.rev/x_y-z", "k".repeat(63), "9-._/"])
    test(`${JSON.stringify(key.slice(0, 20))} (${key.length}) is valid`, () => {
      expect(labelKeyProblem(key)).toBeUndefined();
    });
  for (const key of ["", "k".repeat(64), "Site", ".a", "-a", "_a", "/a", "a b", "a=b", "café", "a\n"])
    test(`${JSON.stringify(key.slice(0, 20))} (${key.length}) is refused`, () => {
      expect(labelKeyProblem(key)).toBe(KEY_PROBLEM);
    });
});

describe("values", () => {
  for (const value of ["", "x", "v".repeat(128), "new york", "!~", 'say "hi"', "a=b,c"])
    test(`${JSON.stringify(value.slice(0, 20))} (${value.length}) is valid`, () => {
      expect(labelValueProblem(value)).toBeUndefined();
    });
  test("129 characters are too many", () => {
    expect(labelValueProblem("v".repeat(129))).toBe(VALUE_TOO_LONG);
  });
  for (const value of [" a", "a ", " ", "café", "a\tb", "a\x7f", "\x00", "a\nb"])
    test(`${JSON.stringify(value)} is refused`, () => {
      expect(labelValueProblem(value)).toBe(NOT_PRINTABLE);
    });
});

test("the longest label a form takes as key=value fits in LABEL_TEXT_MAX", () => {
  const longest = `${"k".repeat(63)}=${"v".repeat(LABEL_VALUE_MAX)}`;
  expect(labelKeyProblem("k".repeat(63))).toBeUndefined();
  expect(longest.length).toBeLessThanOrEqual(LABEL_TEXT_MAX);
});

describe("a set of labels", () => {
  const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `v${i}`]));

  test(`${LABELS_PER_DEVICE_MAX} valid labels (and none) pass`, () => {
    expect(labelsProblem(many(64))).toBeUndefined();
    expect(labelsProblem({})).toBeUndefined();
  });
  test("65 labels are too many, whatever they are", () => {
    expect(labelsProblem(many(65))).toEqual({ key: "", message: "at most 64 labels" });
  });
  test("each problem names its label, the first one found", () => {
    expect(labelsProblem({ site: "berlin", Site: "x" })).toEqual({
      key: "Site",
      message: `key "Site" ${KEY_PROBLEM}`,
    });
    expect(labelsProblem({ site: "berlin", rack: 7 })).toEqual({
      key: "rack",
      message: "the value of rack must be a string",
    });
    expect(labelsProblem({ site: "berlin", rack: null })).toEqual({
      key: "rack",
      message: "the value of rack must be a string",
    });
    expect(labelsProblem({ site: "berlin", rack: "a ", env: 1 })).toEqual({
      key: "rack",
      message: `the value of rack ${NOT_PRINTABLE}`,
    });
    expect(labelsProblem({ site: "v".repeat(129) })).toEqual({
      key: "site",
      message: `the value of site ${VALUE_TOO_LONG}`,
    });
  });
  test("an empty value is a label without a value", () => {
    expect(labelsProblem({ site: "" })).toBeUndefined();
  });
});
