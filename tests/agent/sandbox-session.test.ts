// The QuickJS session itself (no script runner around it): what crosses the boundary each way, how
// errors are typed, console capture and its caps, the output cap, deadlines, and which instances the
// pool takes back.
import { describe, expect, spyOn, test } from "bun:test";
import {
  type EvalOutcome,
  type HostBuiltins,
  pooledInstanceCount,
  prewarmInstances,
  quickjsModule,
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
  // Settles after the session has given up on it.
  late: {
    kind: "async",
    fn: (args) => Bun.sleep(300).then(() => (args[0] === "fail" ? Promise.reject(new Error("late")) : 1)),
  },
  // More than a 16 MiB instance can hold: copying it in fails to allocate and overwrites the memory.
  huge: { kind: "sync", fn: () => "\0".repeat(24 << 20) },
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
    received.length = 0;
    expect(await value(`echo(Promise.resolve(2)); "done"`)).toBe("done");
    expect(received[0]).toEqual([{ type: "fulfilled", value: 2 }]);
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
    expect(s.didTimeOut).toBe(true);
    // The deadline is per evaluation: the next one has its own.
    expect(await s.evaluate("1 + 1", "t.js")).toEqual({ ok: true, value: 2 });
    // The pending builtin still holds handles in the runtime, which cannot be freed: not pooled.
    const before = pooledInstanceCount();
    s.close();
    expect(pooledInstanceCount()).toBe(before);
  });

  test("once a call has returned its deadline is off: a job a builtin starts later runs to its end", async () => {
    // A loop long enough for QuickJS to ask the interrupt handler, 200 ms after the deadline.
    const job = `late("ok").then(() => { let n = 0; for (let i = 0; i < 300000; i++) n += i; console.log("ran", n > 0); });`;
    const evaluated = await session({ timeoutMs: 100, memoryMb: 32 });
    expect(await evaluated.evaluate(`${job} 1`, "t.js")).toEqual({ ok: true, value: 1 });
    const called = await session({ timeoutMs: 100, memoryMb: 32 });
    await called.evaluate(`function main() { ${job} return 2; }`, "t.js");
    expect(await called.callGlobal("main")).toEqual({ ok: true, value: 2 });
    for (let i = 0; i < 60 && evaluated.logs.length + called.logs.length < 2; i++) await Bun.sleep(50);
    expect([evaluated.logs, called.logs]).toEqual([["ran true"], ["ran true"]]);
    evaluated.close();
    called.close();
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

  test("the WebAssembly module is compiled once per process", async () => {
    expect(quickjsModule()).toBe(quickjsModule());
    expect(await quickjsModule()).toBeInstanceOf(WebAssembly.Module);
  });

  test("a memory limit below the instance's 16 MiB base heap still holds", async () => {
    const s = await session({ timeoutMs: 2000, memoryMb: 8 });
    expect(await s.evaluate("1 + 1", "t.js")).toEqual({ ok: true, value: 2 });
    expect(
      await s.evaluate("const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);", "t.js"),
    ).toEqual({
      ok: false,
      error: { type: "execution", message: "script exceeded its memory limit of 8 MiB" },
    });
    s.close();
  });

  test("closing frees the runtime: an instance reused again and again does not grow out of the pool", async () => {
    const memoryMb = 48; // a size no other test uses: each session takes the one pooled instance
    const before = pooledInstanceCount();
    for (let i = 0; i < 8; i++) {
      const s = await SandboxSession.create(builtins, { timeoutMs: 5000, memoryMb });
      // 4 MiB held by the context until it is freed; unfreed, eight of them outgrow the 16 MiB margin.
      expect(await s.evaluate("globalThis.keep = 'x'.repeat(4 << 20) + 'y'; keep.length", "t.js")).toEqual({
        ok: true,
        value: (4 << 20) + 1,
      });
      s.close();
      expect(pooledInstanceCount()).toBe(before + 1);
    }
  });

  test("an instance is leased only for its own memory size; one that grew much is not pooled", async () => {
    await prewarmInstances(20, 1); // a small instance waits in the pool
    const big = await SandboxSession.create(builtins, { timeoutMs: 5000, memoryMb: 96 });
    // 60 MiB fits 96 MiB, not the pooled 20 MiB instance's memory.
    const grown = await big.evaluate(
      "const keep = []; for (let i = 0; i < 60; i++) keep.push('x'.repeat(1 << 19) + i); keep.length",
      "t.js",
    );
    expect(grown).toEqual({ ok: true, value: 60 });
    const before = pooledInstanceCount();
    big.close(); // grew by far more than 16 MiB: dropped, not pooled
    expect(pooledInstanceCount()).toBe(before);

    const small = await SandboxSession.create(builtins, { timeoutMs: 5000, memoryMb: 96 });
    // 16 MiB kept: the memory grows from 16 to about 23 MiB, within the 16 MiB margin.
    const kept = await small.evaluate(
      "const some = []; for (let i = 0; i < 16; i++) some.push('y'.repeat(1 << 20) + i); some.length",
      "t.js",
    );
    expect(kept).toEqual({ ok: true, value: 16 });
    small.close(); // grew a little: pooled
    expect(pooledInstanceCount()).toBe(before + 1);
  });

  test("prewarming fills the pool up to the count asked for that size, and the pool holds 16 at most", async () => {
    const size = 28;
    const before = pooledInstanceCount();
    await prewarmInstances(size, 2);
    expect(pooledInstanceCount()).toBe(before + 2);
    await prewarmInstances(size, 2); // already there
    expect(pooledInstanceCount()).toBe(before + 2);
    await prewarmInstances(size, 3);
    expect(pooledInstanceCount()).toBe(before + 3);
    // 18 sessions at once, all healthy: the pool keeps 16.
    const sessions = await Promise.all(
      Array.from({ length: 18 }, () => SandboxSession.create(builtins, { timeoutMs: 1000, memoryMb: size })),
    );
    for (const s of sessions) s.close();
    expect(pooledInstanceCount()).toBe(16);
  });

  test("a builtin that settles after the session gave up touches nothing (no error escapes)", async () => {
    const escaped: unknown[] = [];
    const record = (error: unknown) => escaped.push(error);
    process.on("unhandledRejection", record);
    try {
      for (const arg of ["ok", "fail"]) {
        const s = await session({ timeoutMs: 100, memoryMb: 32 });
        const outcome = await s.evaluate(`late(${JSON.stringify(arg)})`, "t.js");
        expect(outcome.ok).toBe(false);
        s.close();
      }
      await Bun.sleep(500);
      expect(escaped).toEqual([]);
    } finally {
      process.off("unhandledRejection", record);
    }
  });
});

describe("WebAssembly traps", () => {
  // Copying a string into an instance that cannot hold it fails to allocate and overwrites the
  // instance's memory from address 0; QuickJS then traps. Which trap depends on the bytes written:
  // letters make a bad function pointer, NUL bytes a bad memory access.
  const traps: [string, RegExp][] = [
    ["a", /^sandbox failure: \S/],
    ["\0", /^script exceeded its memory limit of 16 MiB$/],
  ];
  const closed: EvalOutcome = { ok: false, error: { type: "execution", message: "sandbox was closed" } };

  test("a source too big for the instance traps: the session is done and its instance dropped", async () => {
    for (const [fill, message] of traps) {
      const s = await session({ timeoutMs: 2000, memoryMb: 16 });
      const outcome = await s.evaluate(fill.repeat(20 << 20), "t.js");
      expect(outcome).toEqual({
        ok: false,
        error: { type: "execution", message: expect.stringMatching(message) },
      });
      expect(s.needsReset).toBe(true);
      expect(await s.evaluate("1", "t.js")).toEqual(closed);
      expect(await s.callGlobal("main")).toEqual(closed);
      const before = pooledInstanceCount();
      s.close();
      expect(pooledInstanceCount()).toBe(before);
    }
  });

  test("a trap in a call ends the session; one in a pending job surfaces at the deadline", async () => {
    const quiet = spyOn(console, "error").mockImplementation(() => {}); // quickjs-emscripten's own report
    try {
      const called = await session({ timeoutMs: 2000, memoryMb: 16 });
      await called.evaluate("function main() { return huge().length; }", "t.js");
      expect(await called.callGlobal("main")).toEqual({
        ok: false,
        error: { type: "execution", message: "script exceeded its memory limit of 16 MiB" },
      });
      expect(await called.evaluate("1", "t.js")).toEqual(closed);
      called.close();

      const job = await session({ timeoutMs: 300, memoryMb: 16 });
      expect(await job.evaluate("Promise.resolve().then(() => huge())", "t.js")).toEqual({
        ok: false,
        error: { type: "timeout", message: "script exceeded its time limit of 300 ms" },
      });
      const before = pooledInstanceCount();
      job.close(); // its runtime cannot be freed any more: dropped
      expect(pooledInstanceCount()).toBe(before);
    } finally {
      quiet.mockRestore();
    }
  });
});
