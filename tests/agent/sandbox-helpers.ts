// What the sandbox tests share: host builtins that record what crosses the boundary, and sessions.
import { type HostBuiltins, SandboxSession } from "../../agent/scripts/sandbox.ts";

export const LIMITS = { timeoutMs: 1000, memoryMb: 32 };
/** What the `echo` builtin received, and the signal the `hang` builtin was given. */
export const seen: { received: unknown[][]; signal: AbortSignal | undefined } = {
  received: [],
  signal: undefined,
};

export const builtins: HostBuiltins = {
  give: { kind: "sync", fn: () => ({ a: [1, "x", null, true, false], n: 2n, u: undefined, f: () => 1 }) },
  echo: {
    kind: "sync",
    fn: (args) => {
      seen.received.push(args);
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
      seen.signal = signal;
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

export async function session(limits = LIMITS) {
  return SandboxSession.create(builtins, limits);
}

export async function value(code: string) {
  const s = await session();
  try {
    const outcome = await s.evaluate(code, "t.js");
    if (!outcome.ok) throw new Error(`${outcome.error.type}: ${outcome.error.message}`);
    return outcome.value;
  } finally {
    s.close();
  }
}

export async function failure(code: string, call?: string) {
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
