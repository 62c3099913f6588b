import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { createBuiltins } from "../../agent/builtins/index.ts";
import { type RunOptions, runScript } from "../../agent/scripts/runner.ts";
import { parseScript } from "../../shared/scripts/frontmatter.ts";
import { scriptText, tempDir, testConfig } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const secretDir = path.join(tmp.dir, "secret");
fs.mkdirSync(secretDir);
fs.writeFileSync(path.join(secretDir, "token"), "s3cr3t");
fs.writeFileSync(path.join(tmp.dir, "allowed.txt"), "hello");
fs.mkdirSync(path.join(tmp.dir, "pub"));
fs.writeFileSync(path.join(tmp.dir, "pub", "a.txt"), "A");
fs.symlinkSync(path.join(secretDir, "token"), path.join(tmp.dir, "pub", "link"));
fs.writeFileSync(path.join(tmp.dir, "big.txt"), "x".repeat(5000));

const config = testConfig(tmp.dir, {
  read_file_allowlist: [
    path.join(tmp.dir, "allowed.txt"),
    `${path.join(tmp.dir, "pub")}/`,
    path.join(tmp.dir, "big.txt"),
    "/proc/loadavg",
  ],
  read_file_max_bytes: 4096,
  exec_allowlist: ["/bin/echo", "/bin/sleep", "/usr/bin/env"],
  exec_timeout_ms: 500,
  script_timeout_ms: 1500,
  script_warn_ms: 300,
});

function opts(overrides: Partial<RunOptions> = {}): RunOptions {
  return { timeoutMs: 1500, warnMs: 300, memoryMb: 32, builtins: createBuiltins(config, "t"), ...overrides };
}

async function run(body: string, schema = "type: object", o: Partial<RunOptions> = {}) {
  return (await runScript(parseScript(scriptText("t", 1, body, schema)), opts(o))).report;
}

describe("sandbox limits", () => {
  test("an infinite loop is stopped at the deadline and typed timeout", async () => {
    const started = Date.now();
    const r = await run("function main() { for (;;) {} }");
    expect(r.status).toBe("timeout");
    expect(r.error?.type).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(3000);
  });

  test("one deadline covers loading the file and main(): slow top-level code + slow main() time out", async () => {
    // each part alone (1000 ms) is within the 1500 ms budget; together they are not
    const busy = "{ const end = Date.now() + 1000; while (Date.now() < end) {} }";
    const started = Date.now();
    const r = await run(`${busy}\nfunction main() { ${busy}; return { ok: true }; }`);
    expect(r.status).toBe("timeout");
    expect(r.error).toEqual({ type: "timeout", message: "script exceeded its time limit of 1500 ms" });
    expect(Date.now() - started).toBeLessThan(1900);
    // the same with an awaited builtin in main()
    const r2 = await run(`${busy}\nasync function main() { await sleep(700); await sleep(700); return {}; }`);
    expect(r2.status).toBe("timeout");
    // each part alone is fine
    expect((await run(`${busy}\nfunction main() { return { ok: true }; }`)).status).toBe("success");
  });

  test("a never-settling promise times out too", async () => {
    const r = await run("async function main() { await new Promise(() => {}); }");
    expect(r.status).toBe("timeout");
  });

  test("a memory bomb hits the memory cap (large strings)", async () => {
    const r = await run("function main() { const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length); }");
    expect(r.status).toBe("error");
    expect(r.error?.type).toBe("execution");
    expect(r.error?.message).toMatch(/memory limit of 32 MiB/);
  });

  test("a memory bomb hits the memory cap (many small objects)", async () => {
    const r = await run(
      "function main() { const a = []; for (let i = 0;; i++) a.push({ i, s: 'v' + i }); }",
      "type: object",
      {
        timeoutMs: 5000,
      },
    );
    expect(r.error?.message).toMatch(/memory limit/);
  });

  test("deep recursion is an execution error, not a host crash", async () => {
    const r = await run("function f() { return f() + 1; } function main() { return { v: f() }; }");
    expect(r.error?.type).toBe("execution");
    expect(r.error?.message).toMatch(/stack overflow/);
    expect(r.error!.message.length).toBeLessThan(2100);
  });

  test("the agent keeps working after a runaway script", async () => {
    const r = await run("function main() { return { ok: 1 }; }");
    expect(r.status).toBe("success");
  });
});

describe("sandbox isolation", () => {
  test("no host globals: process, require, Bun, fetch, Deno, globalThis.process are absent", async () => {
    const r = await run(
      "function main() { return { p: typeof process, r: typeof require, b: typeof Bun, f: typeof fetch, i: typeof import_meta, s: typeof setTimeout, g: typeof globalThis.process }; }",
    );
    expect(r.output).toEqual({
      p: "undefined",
      r: "undefined",
      b: "undefined",
      f: "undefined",
      i: "undefined",
      s: "undefined",
      g: "undefined",
    });
  });

  test("prototype tricks stay inside the sandbox (constructor.constructor, builtin function constructors)", async () => {
    const r = await run(`function main() {
      const out = {};
      const F = ({}).constructor.constructor;
      out.viaObject = F("return typeof process")();
      out.viaBuiltin = read_file.constructor("return typeof process + typeof Bun + typeof require")();
      out.viaProto = Object.getPrototypeOf(exec_cmd).constructor("return typeof globalThis.Bun")();
      try { F("return process.env")(); out.env = "leak"; } catch (e) { out.env = e.name; }
      try { exec_cmd.caller; out.caller = "readable"; } catch (e) { out.caller = e.name; }
      out.global = F("return Object.keys(globalThis).filter(k => !['read_file','exec_cmd','pub_and_get','statfs','sleep','memo_get','memo_set','console','main'].includes(k)).join(',')")();
      return out;
    }`);
    expect(r.status).toBe("success");
    const out = r.output as Record<string, string>;
    expect(out.viaObject).toBe("undefined");
    expect(out.viaBuiltin).toBe("undefinedundefinedundefined");
    expect(out.viaProto).toBe("undefined");
    expect(out.env).toBe("ReferenceError");
    expect(out.global).toBe("");
  });

  test("no state leaks between runs that reuse a pooled WebAssembly instance", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await run(
        "function main() { const seen = typeof globalThis.leaked; globalThis.leaked = 1; Object.prototype.polluted = 1; return { seen, proto: typeof ({}).polluted === 'number' ? 'x' : 'clean' }; }",
      );
      expect(r.output).toEqual({ seen: "undefined", proto: "x" });
    }
    const after = await run(
      "function main() { return { proto: typeof ({}).polluted, leaked: typeof leaked }; }",
    );
    expect(after.output).toEqual({ proto: "undefined", leaked: "undefined" });
  });

  test("values returned by builtins are plain copies (mutating them does not reach the host)", async () => {
    const r = await run(`function main() {
      const a = memo_get("k");
      memo_set("k", { n: 1 });
      const b = memo_get("k"); b.n = 99;
      return { first: a, again: memo_get("k").n };
    }`);
    expect(r.output).toEqual({ first: null, again: 1 });
  });
});

describe("builtins enforce their policies", () => {
  test("read_file outside the allowlist is refused (io)", async () => {
    const r = await run('function main() { return { x: read_file("/etc/shadow") }; }');
    expect(r.error).toEqual({ type: "io", message: "read_file: path is not allowlisted: /etc/shadow" });
  });

  test("an exact-file entry admits that file only, not a longer name that starts with it", async () => {
    const allowed = path.join(tmp.dir, "allowed.txt");
    fs.writeFileSync(`${allowed}.bak`, "backup");
    fs.mkdirSync(`${allowed}.d`, { recursive: true });
    fs.writeFileSync(path.join(`${allowed}.d`, "x"), "x");
    const r = await run(`function main() {
      const tries = [${JSON.stringify(`${allowed}.bak`)}, ${JSON.stringify(path.join(`${allowed}.d`, "x"))}];
      return { refused: tries.map((p) => { try { read_file(p); return "read"; } catch (e) { return e.message; } }), ok: read_file(${JSON.stringify(allowed)}) };
    }`);
    expect(r.output).toEqual({
      refused: [
        `read_file: path is not allowlisted: ${allowed}.bak`,
        `read_file: path is not allowlisted: ${path.join(`${allowed}.d`, "x")}`,
      ],
      ok: "hello",
    });
  });

  test("read_file: traversal, relative paths, symlink escape, size cap and state dir are refused", async () => {
    const pub = path.join(tmp.dir, "pub");
    const r = await run(`function main() {
      const tries = [${JSON.stringify(`${pub}/../secret/token`)}, "secret/token", ${JSON.stringify(`${pub}/link`)}, ${JSON.stringify(path.join(tmp.dir, "big.txt"))}];
      return { results: tries.map((p) => { try { read_file(p); return "read"; } catch (e) { return e.name + ": " + e.message; } }), ok: read_file(${JSON.stringify(`${pub}/a.txt`)}) };
    }`);
    const results = (r.output as { results: string[] }).results;
    expect(results[0]).toMatch(/IoError: read_file: path must be normalised/);
    expect(results[1]).toMatch(/IoError: read_file: path must be absolute/);
    expect(results[2]).toMatch(/IoError: read_file: path resolves outside the allowlist/);
    expect(results[3]).toMatch(/IoError: read_file: .* exceeds 4096 bytes/);
    expect((r.output as { ok: string }).ok).toBe("A");
  });

  test("read_file never reads the agent state dir even when allowlisted", async () => {
    fs.mkdirSync(config.state_dir, { recursive: true });
    fs.writeFileSync(path.join(config.state_dir, "identity.json"), "{}");
    const cfg = { ...config, read_file_allowlist: ["/"] };
    const builtins = createBuiltins(cfg, "t");
    const r = await runScript(
      parseScript(
        scriptText(
          "t",
          1,
          `function main() { return { x: read_file(${JSON.stringify(path.join(config.state_dir, "identity.json"))}) }; }`,
        ),
      ),
      opts({ builtins }),
    );
    expect(r.report.error?.type).toBe("io");
  });

  test("exec_cmd of a non-allowlisted path is refused; allowlisted runs without a shell and with a clean env", async () => {
    process.env.OUTPOST_TEST_LEAK = "leaked";
    const r = await run(`async function main() {
      const out = {};
      for (const [cmd, args] of [["/bin/sh", ["-c", "id"]], ["sh", []], ["../bin/echo", []], ["/bin/../bin/echo", []]]) {
        try { await exec_cmd(cmd, args); out[cmd] = "ran"; } catch (e) { out[cmd] = e.message; }
      }
      out.echo = await exec_cmd("/bin/echo", ["a;b", "$(id)"]);
      out.byName = await exec_cmd("echo", ["hi"]);
      out.env = await exec_cmd("/usr/bin/env", []);
      return out;
    }`);
    delete process.env.OUTPOST_TEST_LEAK;
    const out = r.output as Record<string, string>;
    expect(out["/bin/sh"]).toBe("exec_cmd: command is not allowlisted: /bin/sh");
    expect(out.sh).toBe("exec_cmd: command is not allowlisted: sh");
    expect(out["../bin/echo"]).toMatch(/basename or an absolute path/);
    expect(out["/bin/../bin/echo"]).toMatch(/not allowlisted/);
    expect(out.echo).toBe("a;b $(id)");
    expect(out.byName).toBe("hi");
    expect(out.env).not.toContain("OUTPOST_TEST_LEAK");
    expect(out.env).toContain("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  });

  test("exec_cmd is denied entirely when the allowlist is empty", async () => {
    const builtins = createBuiltins({ ...config, exec_allowlist: [] }, "t");
    const r = await runScript(
      parseScript(scriptText("t", 1, 'async function main() { return { x: await exec_cmd("/bin/echo") }; }')),
      opts({ builtins }),
    );
    expect(r.report.error).toEqual({
      type: "io",
      message: "exec_cmd: capability is not configured (exec_allowlist is empty)",
    });
  });

  test("exec_cmd is killed at its timeout", async () => {
    const r = await run(
      'async function main() { try { await exec_cmd("/bin/sleep", ["5"]); return { r: "finished" }; } catch (e) { return { r: e.message }; } }',
    );
    expect((r.output as { r: string }).r).toBe("exec_cmd: /bin/sleep timed out after 500 ms");
  });

  test("pub_and_get without configured allowlists is refused", async () => {
    const r = await run('async function main() { return { x: await pub_and_get("a/b", "hi") }; }');
    expect(r.error?.type).toBe("io");
    expect(r.error?.message).toMatch(/pub_and_get: capability is not configured/);
  });
});

describe("typed errors and validation", () => {
  test("syntax errors are typed syntax with a line number", async () => {
    const r = await run("function main() {\n  return {;\n}");
    expect(r.error?.type).toBe("syntax");
    expect(r.error?.message).toMatch(/line 8/);
  });

  test("a thrown error is typed execution", async () => {
    const r = await run('function main() { throw new TypeError("boom"); }');
    expect(r.error).toMatchObject({ type: "execution", message: expect.stringContaining("TypeError: boom") });
  });

  test("main() must return an object", async () => {
    expect((await run("function main() { return [1]; }")).error?.message).toBe(
      "main() must return an object, got array",
    );
    expect((await run("function main() { return null; }")).error?.message).toBe(
      "main() must return an object, got null",
    );
  });

  test("output violating the schema is typed validation with readable details", async () => {
    const r = await run(
      'function main() { return { load: "high", extra: 1 }; }',
      "type: object\nrequired: [load, count]\nadditionalProperties: false\nproperties:\n  load: { type: number }\n  count: { type: integer }",
    );
    expect(r.status).toBe("error");
    expect(r.validation_status).toBe("invalid");
    expect(r.error?.type).toBe("validation");
    expect(r.error?.message).toBe("schema validation failed");
    expect(r.error?.details?.simple).toContain("❌ count: required field missing");
    expect(r.error?.details?.simple).toContain("❌ load: expected number");
    expect(r.error?.details?.simple).toContain("❌ extra: unexpected field");
    expect(r.error?.details?.verbose).toContain("keyword: type");
    expect(r.output).toEqual({ load: "high", extra: 1 });
  });

  test("an uncaught builtin failure is typed io", async () => {
    const r = await run('function main() { return { x: read_file("/nope") }; }');
    expect(r.error?.type).toBe("io");
  });

  test("a slow script gets a slow_execution warning", async () => {
    const r = await run("async function main() { await sleep(400); return { ok: true }; }");
    expect(r.status).toBe("success");
    expect(r.warnings?.[0]).toMatchObject({
      type: "slow_execution",
      message: expect.stringMatching(/^script took \d+ms$/),
    });
  });

  test("async main with awaited builtins works and console output is captured", async () => {
    const result = await runScript(
      parseScript(
        scriptText(
          "t",
          1,
          'async function main() { console.log("step", 1); const e = await exec_cmd("/bin/echo", ["x"]); return { e }; }',
        ),
      ),
      opts(),
    );
    expect(result.report.output).toEqual({ e: "x" });
    expect(result.logs).toEqual(["step 1"]);
  });
});
