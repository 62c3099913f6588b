// run_script in the agent's own code: the executor runs the script in the real QuickJS sandbox, with
// the plugin scripts' builtins and limits, and answers its output as the command result.
import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { processMemo } from "../../agent/builtins/index.ts";
import { COMMAND_HANDLERS, executeCommands } from "../../agent/commands/executor.ts";
import type { CommandContext, ServerCommand } from "../../agent/commands/types.ts";
import { ScriptStore } from "../../agent/scripts/store.ts";
import { RUN_SCRIPT_STREAM_MAX_BYTES } from "../../shared/scripts/run-once.ts";
import { logger, scriptText, tempDir, testConfig } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());

function context(name: string, overrides = {}): CommandContext {
  const dir = path.join(tmp.dir, name);
  const config = testConfig(dir, { run_script_enabled: true, command_timeout_ms: 300, ...overrides });
  fs.mkdirSync(config.state_dir, { recursive: true });
  return { config, store: new ScriptStore(config.scripts_dir), logger };
}

const run = (data: string, extra: Record<string, unknown> = {}): ServerCommand => ({
  command_id: `r-${crypto.randomUUID()}`,
  type: "run_script",
  args: [],
  payload: { data, ...extra },
});

/** Every file under a directory (relative paths), to show a run leaves nothing behind. */
function filesUnder(dir: string): string[] {
  return fs.existsSync(dir) ? (fs.readdirSync(dir, { recursive: true }) as string[]).sort() : [];
}

describe("run_script", () => {
  test("a script that ends: OK, exit 0, console.log on stdout, warn/error on stderr, main()'s value, nothing on disk", async () => {
    const ctx = context("ok");
    const before = filesUnder(ctx.config.state_dir);
    const script = [
      "console.log('disk', 42);",
      "console.error('careful');",
      "async function main() {",
      "  await sleep(5);",
      "  console.info('in main');",
      "  return { answer: 42 };",
      "}",
    ].join("\r\n"); // pasted from a browser: CRLF
    const [result] = await executeCommands([run(script)], ctx);
    expect(result).toMatchObject({
      status: "OK",
      output: {
        exit_code: 0,
        stdout: 'disk 42\nin main\n{"answer":42}\n',
        stderr: "careful\n",
        stdout_truncated: false,
        stderr_truncated: false,
      },
    });
    expect(result!.output!.duration_ms).toBeGreaterThanOrEqual(5);
    expect(result!.error).toBeUndefined();
    expect(filesUnder(ctx.config.state_dir)).toEqual(before);
    expect(ctx.store.list()).toEqual([]);
  });

  test("a script that throws: FAILED, exit code 1, its error on stderr and in the result's error", async () => {
    const ctx = context("throws");
    const [result] = await executeCommands(
      [run("console.log('checking');\nthrow new Error('disk full');")],
      ctx,
    );
    expect(result).toMatchObject({
      status: "FAILED",
      error: "exit code 1: Error: disk full (line 2, column 16)",
      output: {
        exit_code: 1,
        stdout: "checking\n",
        stderr: "execution error: Error: disk full (line 2, column 16)\n",
      },
    });
  });

  test("a syntax error and a builtin refused by the allowlist are exit code 1 too", async () => {
    const ctx = context("errors");
    const [syntax, io] = await executeCommands(
      [
        run("let = ;"),
        run("async function main() { await exec_cmd('/bin/rm', ['-rf', '/tmp/x']); }", { name: "rm" }),
      ],
      ctx,
    );
    expect(syntax).toMatchObject({ status: "FAILED", output: { exit_code: 1 } });
    expect(syntax!.output!.stderr).toStartWith("syntax error: ");
    expect(io).toMatchObject({ status: "FAILED", output: { exit_code: 1 } });
    expect(io!.output!.stderr).toContain("io error: ");
  });

  test("the run's timeout_seconds ends a script that never stops: FAILED timeout, exit code 124, output so far", async () => {
    const ctx = context("timeout"); // command_timeout_ms 300: the run's own limit applies, not this one
    const started = performance.now();
    const [result] = await executeCommands(
      [run("console.log('started');\nwhile (true) {}", { timeout_seconds: 1 })],
      ctx,
    );
    const elapsed = performance.now() - started;
    expect(result).toMatchObject({
      status: "FAILED",
      error: "timeout",
      output: {
        exit_code: 124,
        stdout: "started\n",
        stderr: "timeout error: script exceeded its time limit of 1000 ms\n",
      },
    });
    expect(elapsed).toBeGreaterThan(900);
    expect(elapsed).toBeLessThan(2900);
  });

  test("without timeout_seconds the plugin scripts' script_timeout_ms applies (an awaited builtin too)", async () => {
    const ctx = context("default-timeout", { script_timeout_ms: 400 });
    const [result] = await executeCommands([run("async function main() { await sleep(5000); }")], ctx);
    expect(result).toMatchObject({ status: "FAILED", error: "timeout", output: { exit_code: 124 } });
    expect(result!.output!.stderr).toContain("time limit of 400 ms");
  });

  test("the run's timeout bounds exec_cmd as a plugin script's does (not the shorter script_timeout_ms)", async () => {
    const ctx = context("exec-timeout", {
      script_timeout_ms: 300,
      exec_timeout_ms: 5000,
      exec_allowlist: ["/usr/bin/sleep", "/usr/bin/echo"],
    });
    const [result] = await executeCommands(
      [
        run(
          "async function main() { await exec_cmd('sleep', ['0.6']); return await exec_cmd('echo', ['done']); }",
          {
            timeout_seconds: 5,
          },
        ),
      ],
      ctx,
    );
    expect(result).toMatchObject({ status: "OK", output: { exit_code: 0, stdout: "done\n" } });
  });

  test("stdout and stderr are cut at 16 KiB each, never inside a character, and marked truncated", async () => {
    const ctx = context("truncation");
    const [result] = await executeCommands(
      [
        run(
          "for (let i = 0; i < 3000; i++) { console.log('é'.repeat(9) + i); console.warn('w' + i); }\nconsole.log('END');",
        ),
      ],
      ctx,
    );
    const output = result!.output as Record<string, unknown>;
    expect(result!.status).toBe("OK");
    expect(output.stdout_truncated).toBe(true);
    expect(output.stderr_truncated).toBe(true);
    const stdout = output.stdout as string;
    expect(Buffer.byteLength(stdout)).toBeLessThanOrEqual(RUN_SCRIPT_STREAM_MAX_BYTES);
    expect(Buffer.byteLength(stdout)).toBeGreaterThan(RUN_SCRIPT_STREAM_MAX_BYTES - 4);
    expect(stdout).not.toContain("\uFFFD");
    expect(stdout).not.toContain("END");
    expect(stdout).toStartWith(`${"é".repeat(9)}0\n`);
    expect(Buffer.byteLength(output.stderr as string)).toBe(RUN_SCRIPT_STREAM_MAX_BYTES);

    // One line whose cut falls inside a two-byte character: the character is left out whole.
    const [split] = await executeCommands([run("console.error('x' + 'é'.repeat(9000));")], ctx);
    expect(split!.output!.stderr).toBe(`x${"é".repeat((RUN_SCRIPT_STREAM_MAX_BYTES - 2) / 2)}`);
    expect(split!.output!.stderr_truncated).toBe(true);

    const [small] = await executeCommands([run("console.log('x'.repeat(100));")], ctx);
    expect(small!.output).toMatchObject({ stdout_truncated: false, stderr_truncated: false });
  });

  test("an agent whose config does not enable it refuses: FAILED, nothing run", async () => {
    const ctx = context("disabled", { run_script_enabled: false });
    const marker = path.join(tmp.dir, "ran");
    const [result] = await executeCommands(
      [run(`async function main() { await exec_cmd('/usr/bin/touch', ['${marker}']); }`)],
      { ...ctx, config: { ...ctx.config, exec_allowlist: ["/usr/bin/touch"] } },
    );
    expect(result).toEqual({
      command_id: expect.any(String),
      status: "FAILED",
      error: "run_script is disabled by this agent's config (run_script_enabled: false)",
    });
    expect(fs.existsSync(marker)).toBe(false);
  });

  test("an agent that does not know run_script answers FAILED unsupported command (an older agent)", async () => {
    const ctx = context("older");
    const { run_script: _, ...older } = COMMAND_HANDLERS;
    const [result] = await executeCommands([run("console.log(1)")], ctx, new Map(), older);
    expect(result).toEqual({
      command_id: expect.any(String),
      status: "FAILED",
      error: "unsupported command: run_script",
    });
  });

  test("a run has a memo of its own: it neither reads nor changes installed scripts' memos", async () => {
    const ctx = context("memo");
    processMemo.set("cpu", "previous", { total: 1 });
    const [result] = await executeCommands(
      [run("console.log(JSON.stringify(memo_get('previous')));\nmemo_set('previous', 'overwritten');")],
      ctx,
    );
    expect(result!.output!.stdout).toBe("null\n");
    expect(processMemo.get("cpu", "previous")).toEqual({ total: 1 });
  });

  test("a plugin script runs once as it is (front matter checked); a #! script or a bad timeout is refused", async () => {
    const ctx = context("formats");
    const [plugin, shebang, bad, badTimeout] = await executeCommands(
      [
        run(scriptText("probe", 2, "function main() { return { ok: true }; }")),
        run("#!/bin/sh\necho hi"),
        run("/*---\nname: ../x\nschema:\n  type: object\n---*/\nfunction main() {}"),
        run("console.log(1)", { timeout_seconds: 301 }),
      ],
      ctx,
    );
    expect(plugin).toMatchObject({ status: "OK", output: { exit_code: 0, stdout: '{"ok":true}\n' } });
    expect(ctx.store.list()).toEqual([]);
    expect(shebang).toMatchObject({ status: "FAILED" });
    expect(shebang!.error).toContain("not a shell");
    expect(bad).toMatchObject({ status: "FAILED" });
    expect(bad!.error).toContain("invalid script name");
    expect(badTimeout).toEqual({
      command_id: expect.any(String),
      status: "FAILED",
      error: "timeout_seconds must be a whole number from 1 to 300",
    });
  });

  test("a script cannot read the agent's state or config (the plugin scripts' deny list)", async () => {
    const ctx = context("deny");
    const config = path.join(tmp.dir, "deny", "agent.yaml");
    fs.writeFileSync(config, "run_script_enabled: true\n");
    const [result] = await executeCommands([run(`console.log(read_file(${JSON.stringify(config)}));`)], {
      ...ctx,
      configSource: config,
      config: { ...ctx.config, read_file_allowlist: [path.dirname(config)] },
    });
    expect(result).toMatchObject({ status: "FAILED", output: { exit_code: 1, stdout: "" } });
    expect(result!.output!.stderr).toContain("io error");
  });
});
