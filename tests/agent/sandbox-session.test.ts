// The QuickJS session itself (no script runner around it): what crosses the boundary each way, how
// errors are typed, console capture and its caps, the output cap, deadlines, and which instances the
// pool takes back.
import { describe, expect, test } from "bun:test";
import {
  type EvalOutcome,
  type HostBuiltins,
  pooledInstanceCount,
  SandboxSession,
} from "../../agent/scripts/sandbox.ts";

const LIMITS = { timeoutMs: 1000, memoryMb: 32 };
const received: unknown[][] = [];
let lastSignal: AbortSignal | undefined;

const builtins: HostBuiltins = {
  give: { kind: "sync", fn: () => ({ a: [1, "x", null, true, false], n: 2n, u: undefined, f: () => 1 }) },
  echo: {
    kind: "sync",
    fn: (args) => {
      received.push(args);
      return args.length;
    },
  },
  later: { kind: "async", fn: async (args) => ({ got: args[0] ?? null }) },
  fail: {
    kind: "async",
    fn: async (args) => {
      if (args[0] === "plain") throw new Error("plain failure");
      if (args[0] === "typed") throw new TypeError("typed failure");
      if (args[0] === "long") throw new Error("y".repeat(3000));
      throw "a string"; // not an Error
    },
  },
  hang: {
    kind: "async",
    fn: (_args, signal) => {
      lastSignal = signal;
      return new Promise(() => {});
    },
  },
};

async function session(limits = LIMITS) {
  return SandboxSession.create(builtins, limits);
}

async function value(code: string) {
  const s = await session();
  try {
    const outcome = await s.evaluate(code, "t.js");
    if (!outcome.ok) throw new Error(`${outcome.error.type}: ${outcome.error.message}`);
    return outcome.value;
  } finally {
    s.close();
  }
}

async function failure(code: string, call?: string) {
  const s = await session();
  try {
    const loaded = await s.evaluate(code, "t.js");
    const outcome = call && loaded.ok ? await s.callGlobal(call) : loaded;
    if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome.value)}`);
    return outcome.error;
  } finally {
    s.close();
  }
}

describe("values across the boundary", () => {
  test("host values become plain sandbox values: bigint a number, undefined and functions undefined", async () => {
    expect(
      await value(`const v = give();
        JSON.stringify([v.a, v.n, typeof v.n, "u" in v, typeof v.u, typeof v.f, Array.isArray(v.a)])`),
    ).toBe(JSON.stringify([[1, "x", null, true, false], 2, "number", true, "undefined", "undefined", true]));
  });

  test("builtins receive their arguments as plain values", async () => {
    received.length = 0;
    expect(await value(`echo(1, "a", [1, [2]], { x: { y: null } }, true)`)).toBe(5);
    expect(received).toEqual([[1, "a", [1, [2]], { x: { y: null } }, true]]);
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
    await s.evaluate(`for (let i = 0; i < 300; i++) console.log(i)`, "t.js");
    expect(s.logs).toHaveLength(200);
    expect(s.logs.at(-1)).toBe("193");
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
});

describe("limits and the instance pool", () => {
  test("a busy loop and a pending builtin both end at the deadline; the builtin's signal is aborted", async () => {
    const s = await session({ timeoutMs: 200, memoryMb: 32 });
    const started = Date.now();
    expect(await s.evaluate("for (;;) {}", "t.js")).toEqual({
      ok: false,
      error: { type: "timeout", message: "script exceeded its time limit of 200 ms" },
    });
    expect(s.didTimeOut).toBe(true);
    expect(Date.now() - started).toBeLessThan(2000);
    lastSignal = undefined;
    expect(await s.evaluate("hang()", "t.js")).toEqual({
      ok: false,
      error: { type: "timeout", message: "script exceeded its time limit of 200 ms" },
    });
    expect((lastSignal as AbortSignal | undefined)?.aborted).toBe(true);
    // The deadline is per evaluation: the next one has its own.
    expect(await s.evaluate("1 + 1", "t.js")).toEqual({ ok: true, value: 2 });
    s.close();
  });

  test("a healthy session's instance goes back to the pool; one that ran out of memory does not", async () => {
    const memoryMb = 24; // a size no other test uses, so the pool's count is this test's
    const healthy = await SandboxSession.create(builtins, { timeoutMs: 2000, memoryMb });
    await healthy.evaluate("1", "t.js");
    expect(healthy.needsReset).toBe(false);
    const before = pooledInstanceCount();
    healthy.close();
    expect(pooledInstanceCount()).toBe(before + 1);
    healthy.close(); // twice is once
    expect(pooledInstanceCount()).toBe(before + 1);

    const hungry = await SandboxSession.create(builtins, { timeoutMs: 2000, memoryMb });
    expect(pooledInstanceCount()).toBe(before); // it took the pooled one
    const outcome = await hungry.evaluate(
      "const a = []; for (;;) a.push('x'.repeat(1e5) + a.length);",
      "t.js",
    );
    expect(outcome).toEqual({
      ok: false,
      error: { type: "execution", message: `script exceeded its memory limit of ${memoryMb} MiB` },
    });
    expect(hungry.needsReset).toBe(true);
    hungry.close();
    expect(pooledInstanceCount()).toBe(before);
  });
});
