import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten";
import type { ScriptError } from "../../shared/scripts/errors.ts";
import { type InstanceLease, leaseInstance, releaseInstance } from "./instance-pool.ts";
import { dumpValue, toVm, truncate } from "./sandbox-values.ts";

/**
 * QuickJS (WebAssembly) sandbox.
 *
 * Design: every sandbox session runs in its own QuickJS runtime inside a WebAssembly *instance* that no
 * other session uses at the same time, with a bounded `WebAssembly.Memory` (the memory cap) and an
 * interrupt deadline (the CPU cap). Instances are pooled; a doubtful one is never reused. Host builtins are
 * plain functions; async builtins return sandbox promises that the host resolves when its own promise
 * settles ("host resolves promises" design, sync QuickJS build — no asyncify), so scripts `await` them.
 * Only JSON-like values cross the boundary: no host object is ever exposed to sandboxed code.
 */

/** A value that may cross the sandbox boundary. */
export type JsonLike = null | boolean | number | string | JsonLike[] | { [key: string]: JsonLike };

/** A host function callable from the sandbox. Arguments arrive as plain JSON-like values. */
export interface HostBuiltin {
  kind: "sync" | "async";
  fn: (args: unknown[], signal: AbortSignal) => unknown;
}

export type HostBuiltins = Record<string, HostBuiltin>;

export interface SandboxLimits {
  timeoutMs: number;
  memoryMb: number;
}

/** Where `console.*` lines go instead of `logs` (a script run once keeps stdout and stderr apart). */
export type ConsoleSink = (level: "log" | "info" | "warn" | "error" | "debug", line: string) => void;

export type EvalOutcome = { ok: true; value: unknown } | { ok: false; error: ScriptError };

/** Thrown by builtins for I/O or permission failures: reported to scripts as `IoError`, typed `io`. */
export class BuiltinIoError extends Error {
  override name = "IoError";
}

const MAX_OUTPUT_CHARS = 256 * 1024;
/** A QuickJS context with builtins installed; evaluates code under the deadline and memory cap. */
export class SandboxSession {
  readonly logs: string[] = [];
  private deadline = 0;
  private timedOut = false;
  private dead = false;
  private closed = false;
  private readonly abort = new AbortController();

  /** Set when the instance may be inconsistent (out of memory, trap): it is then not reused. */
  private broken = false;

  private constructor(
    private readonly runtime: QuickJSRuntime,
    private readonly vm: QuickJSContext,
    private readonly limits: SandboxLimits,
    private readonly lease: InstanceLease,
    private readonly sink: ConsoleSink | undefined,
  ) {}

  static async create(
    builtins: HostBuiltins,
    limits: SandboxLimits,
    sink?: ConsoleSink,
  ): Promise<SandboxSession> {
    const lease = await leaseInstance(limits.memoryMb);
    const runtime = lease.module.newRuntime();
    runtime.setMemoryLimit(limits.memoryMb * 1024 * 1024);
    runtime.setMaxStackSize(512 * 1024);
    const vm = runtime.newContext();
    const session = new SandboxSession(runtime, vm, limits, lease, sink);
    runtime.setInterruptHandler(() => session.deadline > 0 && Date.now() > session.deadline);
    session.installBuiltins(builtins);
    return session;
  }

  /** Whether the last evaluation hit the deadline. */
  get didTimeOut(): boolean {
    return this.timedOut;
  }

  private installBuiltins(builtins: HostBuiltins) {
    const { vm } = this;
    for (const [name, builtin] of Object.entries(builtins)) {
      const handle = vm.newFunction(name, (...argHandles) => {
        const args = argHandles.map((h) => dumpValue(vm, h));
        if (builtin.kind === "sync") {
          const value = builtin.fn(args, this.abort.signal);
          return toVm(vm, value);
        }
        const deferred = vm.newPromise();
        Promise.resolve()
          .then(() => builtin.fn(args, this.abort.signal))
          .then(
            (value) => {
              if (this.dead || !deferred.alive) return;
              const h = toVm(vm, value);
              deferred.resolve(h);
              h.dispose();
              this.runPendingJobs();
            },
            (err: unknown) => {
              if (this.dead || !deferred.alive) return;
              const e = err instanceof Error ? err : new Error(String(err));
              const h = vm.newError({
                name: e.name === "Error" ? "IoError" : e.name,
                message: truncate(e.message),
              });
              deferred.reject(h);
              h.dispose();
              this.runPendingJobs();
            },
          );
        return deferred.handle;
      });
      vm.setProp(vm.global, name, handle);
      handle.dispose();
    }
    // console.log/info/warn/error collect lines (shown by `script test --verbose` and the REPL), or
    // go to the session's sink.
    const consoleObj = vm.newObject();
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      const fn = vm.newFunction(level, (...argHandles) => {
        if (!this.sink && this.logs.length >= 200) return;
        const parts = argHandles.map((h) => {
          const v = dumpValue(vm, h);
          return typeof v === "string" ? v : JSON.stringify(v);
        });
        if (this.sink) this.sink(level, parts.join(" "));
        else this.logs.push(truncate(parts.join(" ")));
      });
      vm.setProp(consoleObj, level, fn);
      fn.dispose();
    }
    vm.setProp(vm.global, "console", consoleObj);
    consoleObj.dispose();
  }

  /** Convert a host value into a new sandbox handle (JSON-like values only). */
  private runPendingJobs() {
    let result: ReturnType<QuickJSRuntime["executePendingJobs"]>;
    try {
      result = this.runtime.executePendingJobs();
    } catch {
      // A trap in a job leaves the instance unusable (as in a call): the awaited promise never
      // settles, so the deadline reports it; nothing runs in this session again.
      this.dead = true;
      this.broken = true;
      return;
    }
    // A job that was interrupted or ran out of memory returns its exception: the deadline or the
    // awaited promise reports it, the handle is only freed here.
    if (result.error) result.error.dispose();
  }

  /** Turn a thrown sandbox value into a typed error. */
  private classify(errorHandle: QuickJSHandle, loading: boolean): ScriptError {
    // dump does not throw when memory runs out (QuickJS falls back to a string, at worst an empty
    // one); a trap here reaches the caller's hostFailure like any other.
    const dumped = dumpValue(this.vm, errorHandle);
    const err = (dumped && typeof dumped === "object" ? dumped : { message: String(dumped) }) as {
      name?: unknown;
      message?: unknown;
      stack?: unknown;
    };
    // A script may throw anything: only a string name or message is taken as one.
    const name = typeof err.name === "string" ? err.name : "Error";
    const message = truncate(typeof err.message === "string" ? err.message : String(err.message ?? dumped));
    if (this.timedOut || (name === "InternalError" && message === "interrupted")) {
      this.timedOut = true;
      return this.timeoutError();
    }
    if (/out of memory/i.test(message) || (name === "InternalError" && message === "")) {
      this.broken = true;
      return {
        type: "execution",
        message: `script exceeded its memory limit of ${this.limits.memoryMb} MiB`,
      };
    }
    const where = /:(\d+):(\d+)/.exec(String(err.stack));
    const at = where ? ` (line ${where[1]}, column ${where[2]})` : "";
    if (name === "SyntaxError" && loading) return { type: "syntax", message: `${message}${at}` };
    if (name === "IoError") return { type: "io", message };
    return { type: "execution", message: `${name}: ${message}${at}` };
  }

  /** Arm the interrupt deadline: the given absolute one (shared by several calls), else timeout from now. */
  private timeoutError(): ScriptError {
    return { type: "timeout", message: `script exceeded its time limit of ${this.limits.timeoutMs} ms` };
  }

  private startClock(deadline?: number) {
    this.timedOut = false;
    this.deadline = deadline ?? Date.now() + this.limits.timeoutMs;
  }

  /**
   * Whether this session should be replaced: it can no longer evaluate anything (a trap, a close) or its
   * instance may be inconsistent (it ran out of memory).
   */
  get needsReset(): boolean {
    return this.dead || this.broken;
  }

  /** Settle a handle that may be a promise, within the remaining time. Takes ownership of `handle`. */
  private async settle(handle: QuickJSHandle, loading: boolean): Promise<EvalOutcome> {
    const { vm } = this;
    const state = vm.getPromiseState(handle);
    if (state.type === "fulfilled" && state.notAPromise) return this.exportValue(handle);
    const hostPromise = vm.resolvePromise(handle);
    handle.dispose();
    this.runPendingJobs();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), Math.max(0, this.deadline - Date.now()));
    });
    const settled = await Promise.race([hostPromise, timeout]);
    clearTimeout(timer);
    if (settled === "timeout") {
      this.timedOut = true;
      this.abort.abort();
      return { ok: false, error: this.timeoutError() };
    }
    if (settled.error) {
      const error = this.classify(settled.error, loading);
      settled.error.dispose();
      return { ok: false, error };
    }
    return this.exportValue(settled.value);
  }

  /** Copy a sandbox value to the host through JSON (size-capped). Takes ownership of `handle`. */
  private exportValue(handle: QuickJSHandle): EvalOutcome {
    const { vm } = this;
    if (vm.typeof(handle) === "function") {
      handle.dispose();
      return { ok: true, value: "[function]" };
    }
    const json = vm.getProp(vm.global, "JSON");
    const stringify = vm.getProp(json, "stringify");
    const result = vm.callFunction(stringify, json, handle);
    stringify.dispose();
    json.dispose();
    handle.dispose();
    if (result.error) {
      const error = this.classify(result.error, false);
      result.error.dispose();
      return {
        ok: false,
        error: { type: error.type, message: `value is not JSON-serialisable: ${error.message}` },
      };
    }
    const text = vm.typeof(result.value) === "string" ? vm.getString(result.value) : undefined;
    result.value.dispose();
    if (text === undefined) return { ok: true, value: undefined };
    if (text.length > MAX_OUTPUT_CHARS) {
      return {
        ok: false,
        error: { type: "execution", message: `value exceeds ${MAX_OUTPUT_CHARS} characters of JSON` },
      };
    }
    return { ok: true, value: JSON.parse(text) };
  }

  /**
   * Evaluate code in the global scope; a promise result is awaited. `deadline` (epoch ms) lets several
   * calls share one time budget (a script run: loading the file and calling main()); default: the
   * timeout from now.
   */
  async evaluate(code: string, filename: string, deadline?: number): Promise<EvalOutcome> {
    return this.run(deadline, () => this.outcome(this.vm.evalCode(code, filename, { type: "global" }), true));
  }

  /** Call a global function by name with no arguments (e.g. `main`), awaiting a returned promise. */
  async callGlobal(name: string, deadline?: number): Promise<EvalOutcome> {
    if (!this.dead && Date.now() >= (deadline ?? Number.POSITIVE_INFINITY)) {
      this.timedOut = true;
      return { ok: false, error: this.timeoutError() };
    }
    return this.run(deadline, () => {
      const fn = this.vm.getProp(this.vm.global, name);
      if (this.vm.typeof(fn) !== "function") {
        fn.dispose();
        return { ok: false, error: { type: "execution", message: `script does not define ${name}()` } };
      }
      const result = this.vm.callFunction(fn, this.vm.undefined);
      fn.dispose();
      return this.outcome(result, false);
    });
  }

  /** Runs `work` in the sandbox on the clock until `deadline`; a failure of the host (a trap) ends the sandbox. */
  private async run(
    deadline: number | undefined,
    work: () => EvalOutcome | Promise<EvalOutcome>,
  ): Promise<EvalOutcome> {
    if (this.dead) return { ok: false, error: { type: "execution", message: "sandbox was closed" } };
    this.startClock(deadline);
    try {
      return await work();
    } catch (err) {
      return { ok: false, error: this.hostFailure(err) };
    } finally {
      this.deadline = 0;
    }
  }

  /** What an evaluation or call came to: its thrown error, classified, or its (awaited) value. */
  private outcome(
    result: ReturnType<QuickJSContext["evalCode"]>,
    loading: boolean,
  ): EvalOutcome | Promise<EvalOutcome> {
    if (result.error) {
      const error = this.classify(result.error, loading);
      result.error.dispose();
      return { ok: false, error };
    }
    return this.settle(result.value, loading);
  }

  /** Set a global to a JSON-like value (used by the REPL for `_`). */
  setGlobal(name: string, value: unknown) {
    if (this.dead) return;
    try {
      const h = toVm(this.vm, value);
      this.vm.setProp(this.vm.global, name, h);
      h.dispose();
    } catch {
      // best effort
    }
  }

  private hostFailure(err: unknown): ScriptError {
    // A WebAssembly trap (e.g. the instance aborted) leaves this instance unusable.
    this.dead = true;
    this.broken = true;
    const message = err instanceof Error ? err.message : String(err);
    if (/memory/i.test(message)) {
      return {
        type: "execution",
        message: `script exceeded its memory limit of ${this.limits.memoryMb} MiB`,
      };
    }
    return { type: "execution", message: `sandbox failure: ${truncate(message, 300)}` };
  }

  /**
   * Release the session: pending host operations are aborted, the QuickJS runtime is freed and the
   * WebAssembly instance goes back to the pool — unless anything about it is doubtful (out of memory,
   * a trap, handles still referenced by unsettled promises, grown memory); then it is dropped whole
   * and reclaimed by the garbage collector.
   */
  close() {
    if (this.closed) return;
    this.closed = true;
    this.dead = true;
    this.abort.abort();
    let reusable = !this.broken;
    if (reusable) {
      try {
        this.vm.dispose();
        this.runtime.dispose();
      } catch {
        reusable = false;
      }
    }
    releaseInstance(this.lease, reusable);
  }
}

export { pooledInstanceCount, prewarmInstances, quickjsModule } from "./instance-pool.ts";
