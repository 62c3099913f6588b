// The audit page's Details column as text: a fact a line, a change as `field: before → after`.
import { expect, test } from "bun:test";
import { detailLines } from "../../modules/audit/pages";

test("details read as lines: changes before → after, lists joined, none for null, long values cut", () => {
  expect(
    detailLines({
      changes: {
        role: { from: "viewer", to: "operator" },
        product_name: { from: null, to: "pump" },
        metadata: { from: {}, to: { site: "north" } },
      },
      ids: ["a", "b"],
      changed_ids: [],
      revoked: true,
      note: "x".repeat(300),
    }),
  ).toEqual([
    "role: viewer → operator",
    "product_name: none → pump",
    'metadata: {} → {"site":"north"}',
    "ids: a, b",
    "changed_ids: none",
    "revoked: true",
    `note: ${"x".repeat(119)}…`,
  ]);
  expect(detailLines({ changes: {} })).toEqual(["no field changed"]);
  expect(detailLines({})).toEqual([]);
});
