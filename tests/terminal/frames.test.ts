// The terminal socket's input frames (modules/terminal/model.ts): the browser's text, and bytes as
// base64 (the CLI's stdin); anything else is refused as invalid_frame and reaches no session.
import { expect, test } from "bun:test";
import { clientFrame } from "../../modules/terminal/model";

const input = (payload: unknown) => clientFrame.Check({ event: "input", payload });

test("input is text, or bytes in base64 of at most 64 KiB; nothing else", () => {
  expect(input({ data: "ls\r" })).toBe(true);
  expect(input({ data: Buffer.from([0, 255, 254]).toString("base64"), encoding: "base64" })).toBe(true);
  expect(input({ data: Buffer.alloc(48 * 1024, 0xff).toString("base64"), encoding: "base64" })).toBe(true);
  expect(input({ data: "", encoding: "base64" })).toBe(true);
  // Not base64, another encoding, too long, a stray field, no data.
  expect(input({ data: "not base64!", encoding: "base64" })).toBe(false);
  expect(input({ data: "AAAA", encoding: "hex" })).toBe(false);
  expect(input({ data: Buffer.alloc(49 * 1024).toString("base64"), encoding: "base64" })).toBe(false);
  expect(input({ data: "ls", extra: 1 })).toBe(false);
  expect(input({ encoding: "base64" })).toBe(false);
});
