// The QuickJS session itself (no script runner around it): what crosses the boundary each way, how
// errors are typed, console capture and its caps, the output cap. Deadlines, memory and the instance
// pool: sandbox-limits.test.ts.
import { describe, expect, spyOn, test } from "bun:test";
import type { EvalOutcome } from "../../agent/scripts/sandbox.ts";
import { failure, seen, session, value } from "./sandbox-helpers.ts";

describe("values across the boundary", () => {
  test("host values become plain sandbox values: bigint a number, undefined and functions undefined", async () => {
    expect(
      await value(`const v = give();
        JSON.stringify([v.a, v.n, typeof v.n, "u" in v, typeof v.u, typeof v.f, Array.isArray(v.a)])`),
    ).toBe(JSON.stringify([[1, "x", null, true, false], 2, "number", true, "undefined", "undefined", true]));
  });

  test("builtins receive their arguments as plain values", async () => {
    seen.received.length = 0;
    expect(await value(`echo(1, "a", [1, [2]], { x: { y: null } }, true)`)).toBe(5);
    expect(seen.received).toEqual([[1, "a", [1, [2]], { x: { y: null } }, true]]);
  });

  test("what the host reads out is let go: forty 1 MiB objects through console.log and a builtin fit in 16 MiB", async () => {
    const s = await session({ timeoutMs: 5000, memoryMb: 16 });
    const script = `for (let i = 0; i < 40; i++) { const o = { big: "x".repeat(1 << 20) + i }; console.log(o); echo(o); } "done"`;
    seen.received.length = 0;
    expect(await s.evaluate(script, "t.js")).toEqual({ ok: true, value: "done" });
    expect(seen.received).toHaveLength(40);
    seen.received.length = 0; // 40 MiB of host strings
    s.close();
  });

  test("async builtins resolve into the sandbox; failures arrive as typed errors", async () => {
    expect(await value(`later("k").then((v) => v.got)`)).toBe("k");
    expect(await value(`later().then((v) => v.got)`)).toBe(null);
    const caught = (arg: string) =>
      value(
        `fail(${JSON.stringify(arg)}).then(() => "resolved", (e) => [e.name, e.message, e instanceof Error])`,
      );
    expect(await caught("plain")).toEqual(["IoError", "plain failure", true]);
    expect(await caught("typed")).toEqual(["TypeError", "typed failure", true]);
    expect(await caught("other")).toEqual(["IoError", "a string", true]);
    const [, long] = (await caught("long")) as string[];
    expect(long).toBe(`${"y".repeat(2000)}…`);
  });

  test("the result: undefined, a function's placeholder, JSON values; not serialisable is an error", async () => {
    const s = await session();
    expect(s.didTimeOut).toBe(false);
    expect(await s.evaluate("Promise.resolve(5)", "t.js")).toEqual({ ok: true, value: 5 });
    expect(await s.evaluate("undefined", "t.js")).toEqual({ ok: true, value: undefined });
    expect(await s.evaluate("(function f() {})", "t.js")).toEqual({ ok: true, value: "[function]" });
    expect(await s.evaluate("({ a: [1, 'b'], c: null })", "t.js")).toEqual({
      ok: true,
      value: { a: [1, "b"], c: null },
    });
    expect(await s.evaluate("({ toJSON() { return undefined; } })", "t.js")).toEqual({
      ok: true,
      value: undefined,
    });
    const bigint = await s.evaluate("({ n: 1n })", "t.js");
    expect(bigint.ok).toBe(false);
    if (!bigint.ok) {
      expect(bigint.error.type).toBe("execution");
      expect(bigint.error.message).toStartWith("value is not JSON-serialisable: TypeError: ");
    }
    s.close();
  });

  test("only a real promise is awaited: a thenable is a plain value", async () => {
    expect(await value("({ then(resolve) { resolve(7); }, n: 1 })")).toEqual({ n: 1 });
  });

  test("the result may hold 256 KiB of JSON, not a character more", async () => {
    const cap = 256 * 1024;
    expect(((await value(`"x".repeat(${cap - 2})`)) as string).length).toBe(cap - 2);
    const error = await failure(`"x".repeat(${cap - 1})`);
    expect(error).toEqual({ type: "execution", message: `value exceeds ${cap} characters of JSON` });
  });
});

describe("console", () => {
  test("every level is captured, values as JSON, at most 200 lines of at most 2,000 characters", async () => {
    const s = await session();
    await s.evaluate(
      `console.log("a", 1, { b: [2] }); console.info("i"); console.warn("w"); console.error("e"); console.debug(null);
       console.log("z".repeat(2500));`,
      "t.js",
    );
    expect(s.logs.slice(0, 5)).toEqual(['a 1 {"b":[2]}', "i", "w", "e", "null"]);
    expect(s.logs[5]).toBe(`${"z".repeat(2000)}…`);
    await s.evaluate(`console.log("q".repeat(2000))`, "t.js");
    expect(s.logs[6]).toBe("q".repeat(2000)); // exactly the limit: whole, no ellipsis
    await s.evaluate(`for (let i = 0; i < 300; i++) console.log(i)`, "t.js");
    expect(s.logs).toHaveLength(200);
    expect(s.logs.at(-1)).toBe("192");
    s.close();
  });
});

describe("errors are typed", () => {
  test("a syntax error while loading is syntax with its line and column; a thrown one later is execution", async () => {
    expect(await failure("let x = ;\n")).toEqual({
      type: "syntax",
      message: expect.stringMatching(/^unexpected token in expression: ';' \(line 1, column \d+\)$/),
    });
    const late = await failure(`function main() {\n  JSON.parse("{");\n}`, "main");
    expect(late.type).toBe("execution");
    expect(late.message).toStartWith("SyntaxError: ");
    expect(late.message).toMatch(/\(line \d+, column \d+\)$/);
  });

  test("a SyntaxError the loaded file's promise rejects with is syntax; from main() or a toJSON it is execution", async () => {
    expect(await failure(`Promise.reject(new SyntaxError("at load"))`)).toEqual({
      type: "syntax",
      message: expect.stringMatching(/^at load \(line 1, column \d+\)$/),
    });
    expect(await failure(`async function main() {\n  JSON.parse("{");\n}`, "main")).toEqual({
      type: "execution",
      message: expect.stringMatching(/^SyntaxError: .* \(line \d+, column \d+\)$/),
    });
    expect(await failure(`({ toJSON() { JSON.parse("{"); } })`)).toEqual({
      type: "execution",
      message: expect.stringMatching(/^value is not JSON-serialisable: SyntaxError: /),
    });
  });

  test("thrown errors keep their name; IoError is io; a thrown non-error is an Error", async () => {
    expect(await failure(`function main() {\n  throw new RangeError("r");\n}`, "main")).toEqual({
      type: "execution",
      message: "RangeError: r (line 2, column 23)",
    });
    const io = await failure(
      `function main() { const e = new Error("denied"); e.name = "IoError"; throw e; }`,
      "main",
    );
    expect(io).toEqual({ type: "io", message: "denied" });
    expect(await failure(`function main() { throw "oops"; }`, "main")).toEqual({
      type: "execution",
      message: "Error: oops",
    });
    // Only QuickJS's own "interrupted" is the deadline; only its empty InternalError is memory.
    expect(await failure(`function main() { throw new Error("interrupted"); }`, "main")).toMatchObject({
      type: "execution",
      message: expect.stringMatching(/^Error: interrupted/),
    });
    expect(await failure(`function main() { throw new InternalError(""); }`, "main")).toEqual({
      type: "execution",
      message: "script exceeded its memory limit of 32 MiB",
    });
    expect(await failure(`function main() { throw new Error(""); }`, "main")).toMatchObject({
      type: "execution",
      message: expect.stringMatching(/^Error: /),
    });
    expect(await failure(`function main() { throw new InternalError("x"); }`, "main")).toMatchObject({
      type: "execution",
      message: expect.stringMatching(/^InternalError: x/),
    });
    // Positions past line 9 keep every digit; a load-time error other than a syntax one is execution.
    const deep = `${"\n".repeat(11)}function main() { throw new RangeError("deep"); }`;
    expect((await failure(deep, "main")).message).toMatch(/^RangeError: deep \(line 12, column \d+\)$/);
    expect(await failure(`\nthrow new TypeError("at load");`)).toMatchObject({
      type: "execution",
      message: expect.stringMatching(/^TypeError: at load \(line 2,/),
    });
  });

  test("anything a script throws or hands over is an execution error or a value, never a sandbox failure", async () => {
    // A promise: QuickJS's dump reports its state and frees the handle its owner frees again.
    expect(await failure(`function main() { throw Promise.resolve(1); }`, "main")).toEqual({
      type: "execution",
      message: "Error: [object Object]",
    });
    expect(await failure(`function main() { throw new Promise(() => {}); }`, "main")).toMatchObject({
      type: "execution",
    });
    // A name or message that is not a string.
    expect(await failure(`function main() { throw { message: { length: 5000 } }; }`, "main")).toEqual({
      type: "execution",
      message: "Error: [object Object]",
    });
    expect(await failure(`function main() { throw { name: 7, message: "m" }; }`, "main")).toEqual({
      type: "execution",
      message: "Error: m",
    });
    // A promise given to a builtin or to console.log arrives as its state.
    seen.received.length = 0;
    expect(await value(`echo(Promise.resolve(2)); "done"`)).toBe("done");
    expect(seen.received[0]).toEqual([{ type: "fulfilled", value: 2 }]);
    const s = await session();
    try {
      await s.evaluate(
        `console.log(Promise.reject(new Error("r")).catch(() => 0), Promise.resolve(3))`,
        "t.js",
      );
      expect(s.logs).toHaveLength(1);
      expect(s.logs[0]).toContain('{"type":"fulfilled","value":3}');
    } finally {
      s.close();
    }
  });

  test("a missing main, a closed session and a spent deadline are execution or timeout errors", async () => {
    expect(await failure("1", "main")).toEqual({
      type: "execution",
      message: "script does not define main()",
    });
    expect(await failure("var main = 3", "main")).toEqual({
      type: "execution",
      message: "script does not define main()",
    });
    const s = await session();
    await s.evaluate("function main() { return 1; }", "t.js");
    expect(await s.callGlobal("main", Date.now() - 1)).toEqual({
      ok: false,
      error: { type: "timeout", message: "script exceeded its time limit of 1000 ms" },
    });
    expect(s.didTimeOut).toBe(true);
    expect(await s.callGlobal("main", Date.now() + 1000)).toEqual({ ok: true, value: 1 });
    expect(s.didTimeOut).toBe(false);
    s.setGlobal("_", { last: [1] });
    expect(await s.evaluate("_.last[0] + 1", "t.js")).toEqual({ ok: true, value: 2 });
    s.close();
    const closed: EvalOutcome = { ok: false, error: { type: "execution", message: "sandbox was closed" } };
    expect(await s.evaluate("1", "t.js")).toEqual(closed);
    expect(await s.callGlobal("main")).toEqual(closed);
    s.setGlobal("_", 1); // no effect, no throw
  });

  test("at the deadline's own millisecond running code goes on, but a call does not start", async () => {
    const s = await session();
    await s.evaluate("function main() { return 1; }", "t.js");
    const now = Date.now();
    const clock = spyOn(Date, "now").mockImplementation(() => now); // time stands still
    try {
      const loop = "let n = 0; for (let i = 0; i < 300000; i++) n += i; n > 0";
      expect(await s.evaluate(loop, "t.js", now)).toEqual({ ok: true, value: true });
      expect(await s.callGlobal("main", now)).toEqual({
        ok: false,
        error: { type: "timeout", message: "script exceeded its time limit of 1000 ms" },
      });
    } finally {
      clock.mockRestore();
      s.close();
    }
  });
});
