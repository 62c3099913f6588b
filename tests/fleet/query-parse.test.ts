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
  ["last_seen:<10m", [term({ kind: "last_seen", older: false, seconds: 600 })]],
  ["last_seen:>999999s", [term({ kind: "last_seen", older: true, seconds: 999_999 })]],
  [`product:${"p".repeat(200)}`, [term({ kind: "product", value: "p".repeat(200) })]],
  // At the limits: 64 values in one list, a 128-character value, a 1000-character query.
  [
    `tag:k=${Array.from({ length: 64 }, (_, i) => `v${i}`).join(",")}`,
    [
      term(
        tag(
          "k",
          Array.from({ length: 64 }, (_, i) => `v${i}`),
        ),
      ),
    ],
  ],
  [`tag:k=${"v".repeat(128)}`, [term(tag("k", ["v".repeat(128)]))]],
  [`tag:${"k".repeat(63)}`, [term(tag("k".repeat(63), null))]],
  ["x".repeat(1000), [term({ kind: "text", text: "x".repeat(1000) })]],
  // A backslash escapes a quote inside quotes, also in a comma list and in free text with spaces.
  ['tag:k="a\\",b",c', [term(tag("k", ['a",b', "c"]))]],
  ['"a \\" b"', [term({ kind: "text", text: 'a " b' })]],
  // Keys are lower case: anything else before a colon is free text (an upper-case MAC address too).
  ["Status:online", [term({ kind: "text", text: "Status:online" })]],
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

const UNKNOWN_KEY = (key: string) =>
  `Unknown key "${key}": use tag:, status:, approval:, product:, last_seen: or put the text in quotes`;
const TAG_KEY =
  "A tag key must be 1 to 63 characters: lower-case letters, digits and . _ / -, starting with a letter or digit";
const PRINTABLE = "A tag value must be printable ASCII characters, without spaces at either end";
const LAST_SEEN = "last_seen takes >N or <N with a unit s, m, h, d or w (last_seen:>1h), or never";
const UNCLOSED = "This quote is never closed";
const OR_SIDES = "OR needs a term on each side";
const OR_NEGATED = "A negated term cannot be part of OR: negate each term instead";
const PRODUCT = "A product is 1 to 200 characters";
const sixtyFiveValues = Array.from({ length: 65 }, (_, i) => `v${i}`).join(",");

/** query → [position, length, the message] */
const INVALID: [string, number, number, string][] = [
  ["foo:bar", 0, 3, UNKNOWN_KEY("foo")],
  ["status:online stauts:offline", 14, 6, UNKNOWN_KEY("stauts")],
  ["-foo:bar", 1, 3, UNKNOWN_KEY("foo")],
  // Only a MAC address's one or two hex digits pass as free text before a colon.
  ["cafe:01", 0, 4, UNKNOWN_KEY("cafe")],
  ["status:onlin", 7, 5, "status must be online or offline"],
  ["status:online,", 14, 1, "A value is missing here"],
  ["status:", 6, 1, "status: needs a value"],
  ["approval:maybe", 9, 5, "approval must be pending or approved or rejected"],
  ["tag:Site=x", 4, 4, TAG_KEY],
  ["tag:=x", 4, 1, TAG_KEY],
  [`tag:${"k".repeat(64)}=x`, 4, 64, TAG_KEY],
  [`tag:k=${"v".repeat(129)}`, 6, 129, "A tag value must be at most 128 characters"],
  ['tag:k=" padded"', 6, 9, PRINTABLE],
  ['tag:k="padded "', 6, 9, PRINTABLE],
  ["tag:k=café", 6, 4, PRINTABLE],
  ["tag:site,env", 8, 1, "Give a value to list more values: tag:key=a,b"],
  [`tag:k=${sixtyFiveValues}`, 4, 2 + sixtyFiveValues.length, "At most 64 values in one list"],
  ["last_seen:1h", 10, 2, LAST_SEEN],
  ["last_seen:>1y", 10, 3, LAST_SEEN],
  ["last_seen:x>1h", 10, 4, LAST_SEEN],
  ["last_seen:>1hx", 10, 4, LAST_SEEN],
  ["last_seen:>1234567s", 10, 9, LAST_SEEN],
  ['product:""', 8, 2, PRODUCT],
  [`product:${"p".repeat(201)}`, 8, 201, PRODUCT],
  ['"abc', 0, 1, UNCLOSED],
  ['pump "x', 5, 1, UNCLOSED],
  // A quote inside a word opens there (a word may go on in quotes: tag:k="a b").
  ['ab"c d', 2, 1, UNCLOSED],
  // Outside quotes a backslash escapes nothing: this quote opens.
  ['a\\"b c', 2, 1, UNCLOSED],
  ['tag:site="a b"x', 14, 1, "Nothing may follow the closing quote"],
  ['product:ab"c"', 10, 1, "Put the whole value in quotes"],
  ['""', 0, 2, "Empty quotes: give the text to look for"],
  ['"  "', 0, 4, "Empty quotes: give the text to look for"],
  ["OR status:online", 0, 2, OR_SIDES],
  ["status:online OR", 14, 2, OR_SIDES],
  ["a OR OR b", 5, 2, OR_SIDES],
  ["status:online OR tag:x", 17, 5, "OR joins terms of one key: status: cannot be ORed with tag:"],
  ["pump OR status:online", 8, 13, "OR joins terms of one key: free text cannot be ORed with status:"],
  ["status:online OR pump", 17, 4, "OR joins terms of one key: status: cannot be ORed with free text"],
  ["status:online OR -status:offline", 17, 1, OR_NEGATED],
  ["-status:online OR status:offline", 0, 1, OR_NEGATED],
  [`${"a ".repeat(33)}`, 64, 1, "At most 32 terms in one query"],
  ["x".repeat(1001), 1000, 1, "A query is at most 1000 characters"],
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
      const { name, position: at, length: len, message: text } = error as QueryError;
      expect({ name, at, len, text }).toEqual({
        name: "QueryError",
        at: position,
        len: length,
        text: message,
      });
    });
  }
});
