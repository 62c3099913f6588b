// The QuickJS session's limits: deadlines, memory, which instances the pool takes back, and what a
// WebAssembly trap does to a session.
import { describe, expect, spyOn, test } from "bun:test";
import {
  type EvalOutcome,
  pooledInstanceCount,
  prewarmInstances,
  quickjsModule,
  SandboxSession,
} from "../../agent/scripts/sandbox.ts";
import { builtins, seen, session } from "./sandbox-helpers.ts";

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
    seen.signal = undefined;
    expect(await s.evaluate("hang()", "t.js")).toEqual({
      ok: false,
      error: { type: "timeout", message: "script exceeded its time limit of 200 ms" },
    });
    expect((seen.signal as AbortSignal | undefined)?.aborted).toBe(true);
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
      expect(job.needsReset).toBe(true);
      expect(await job.evaluate("1", "t.js")).toEqual(closed);
      const before = pooledInstanceCount();
      job.close(); // its runtime cannot be freed any more: dropped
      expect(pooledInstanceCount()).toBe(before);
    } finally {
      quiet.mockRestore();
    }
  });
});
