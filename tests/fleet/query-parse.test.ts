// The query language's parser: valid queries and what they mean, invalid ones and where they point.
import { describe, expect, test } from "bun:test";
import { parseQuery, QueryError } from "../../modules/fleet/query/parse";

const tag = (key: string, values: string[] | null) => ({ kind: "tag", key, values });
const term = (...anyOf: unknown[]) => ({ negated: false, anyOf });
const not = (...anyOf: unknown[]) => ({ negated: true, anyOf });

const VALID: [string, unknown[]][] = [
  ["", []],
  ["   ", []],
  ["tag:site=berlin", [term(tag("site", ["berlin"]))]],
  ["tag:site", [term(tag("site", null))]],
  ["tag:site=", [term(tag("site", [""]))]],
  ["tag:site=berlin,munich", [term(tag("site", ["berlin", "munich"]))]],
  ['tag:site="new york"', [term(tag("site", ["new york"]))]],
  ['tag:site="a,b",c', [term(tag("site", ["a,b", "c"]))]],
  ['tag:k="say \\"hi\\""', [term(tag("k", ['say "hi"']))]],
  ["tag:hw.rev/x_y-z=b2", [term(tag("hw.rev/x_y-z", ["b2"]))]],
  ["-tag:env=lab", [not(tag("env", ["lab"]))]],
  ["status:online", [term({ kind: "status", value: "online" })]],
  [
    "status:online OR status:offline",
    [term({ kind: "status", value: "online" }, { kind: "status", value: "offline" })],
  ],
  [
    "status:online,offline",
    [term({ kind: "status", value: "online" }, { kind: "status", value: "offline" })],
  ],
  ["approval:pending", [term({ kind: "approval", value: "pending" })]],
  ['product:"edge gw"', [term({ kind: "product", value: "edge gw" })]],
  ["product:a,b", [term({ kind: "product", value: "a" }, { kind: "product", value: "b" })]],
  ["last_seen:>1h", [term({ kind: "last_seen", older: true, seconds: 3600 })]],
  ["last_seen:<5m", [term({ kind: "last_seen", older: false, seconds: 300 })]],
  ["last_seen:>2d", [term({ kind: "last_seen", older: true, seconds: 172_800 })]],
  ["last_seen:never", [term({ kind: "never_seen" })]],
  ["pump", [term({ kind: "text", text: "pump" })]],
  ['"pump 7"', [term({ kind: "text", text: "pump 7" })]],
  ["-pump", [not({ kind: "text", text: "pump" })]],
  ["-", [term({ kind: "text", text: "-" })]],
  ["aa:bb:cc", [term({ kind: "text", text: "aa:bb:cc" })]],
  ["or", [term({ kind: "text", text: "or" })]],
  ["a OR b", [term({ kind: "text", text: "a" }, { kind: "text", text: "b" })]],
  ["tag:site=berlin OR tag:site=munich", [term(tag("site", ["berlin"]), tag("site", ["munich"]))]],
  [
    'tag:site=berlin status:online product:gateway last_seen:>1h "free text"',
    [
      term(tag("site", ["berlin"])),
      term({ kind: "status", value: "online" }),
      term({ kind: "product", value: "gateway" }),
      term({ kind: "last_seen", older: true, seconds: 3600 }),
      term({ kind: "text", text: "free text" }),
    ],
  ],
];

describe("valid queries", () => {
  for (const [query, terms] of VALID) {
    test(JSON.stringify(query), () => {
      expect(parseQuery(query)).toEqual({ terms } as never);
    });
  }
});

/** query → [position, length, part of the message] */
const INVALID: [string, number, number, string][] = [
  ["foo:bar", 0, 3, 'Unknown key "foo"'],
  ["status:online stauts:offline", 14, 6, 'Unknown key "stauts"'],
  ["-foo:bar", 1, 3, 'Unknown key "foo"'],
  ["status:onlin", 7, 5, "status must be online or offline"],
  ["status:online,", 14, 1, "A value is missing"],
  ["status:", 6, 1, "status: needs a value"],
  ["approval:maybe", 9, 5, "approval must be pending or approved or rejected"],
  ["tag:Site=x", 4, 4, "A tag key must be"],
  ["tag:=x", 4, 1, "A tag key must be"],
  [`tag:${"k".repeat(64)}=x`, 4, 64, "A tag key must be"],
  [`tag:k=${"v".repeat(129)}`, 6, 129, "at most 128 characters"],
  ['tag:k=" padded"', 6, 9, "without spaces at either end"],
  ["tag:site,env", 8, 1, "Give a value to list more values"],
  ["last_seen:1h", 10, 2, "last_seen takes >N or <N"],
  ["last_seen:>1y", 10, 3, "last_seen takes >N or <N"],
  ['"abc', 0, 1, "This quote is never closed"],
  ['pump "x', 5, 1, "This quote is never closed"],
  ['tag:site="a b"x', 14, 1, "Nothing may follow the closing quote"],
  ['product:ab"c"', 10, 1, "Put the whole value in quotes"],
  ['""', 0, 2, "Empty quotes"],
  ["OR status:online", 0, 2, "OR needs a term on each side"],
  ["status:online OR", 14, 2, "OR needs a term on each side"],
  ["a OR OR b", 5, 2, "OR needs a term on each side"],
  ["status:online OR tag:x", 17, 5, "OR joins terms of one key"],
  ["status:online OR -status:offline", 17, 1, "A negated term cannot be part of OR"],
  ["-status:online OR status:offline", 0, 1, "A negated term cannot be part of OR"],
  [`${"a ".repeat(33)}`, 64, 1, "At most 32 terms"],
  ["x".repeat(1001), 1000, 1, "at most 1000 characters"],
];

describe("invalid queries point at the bad token", () => {
  for (const [query, position, length, message] of INVALID) {
    test(JSON.stringify(query.length > 40 ? `${query.slice(0, 40)}…` : query), () => {
      let error: unknown;
      try {
        parseQuery(query);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(QueryError);
      const { position: at, length: len, message: text } = error as QueryError;
      expect({ at, len }).toEqual({ at: position, len: length });
      expect(text).toContain(message);
    });
  }
});
