import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { AGENT_MAIN, BUN, tempDir } from "./helpers.ts";

/** `script repl` in a real terminal: tmux drives it with send-keys and reads it with capture-pane. */

const tmp = tempDir("outpost-repl-");
const socket = `outpost-agent-test-${process.pid}`;
const session = "repl";

function tmux(...args: string[]) {
  const r = Bun.spawnSync(["tmux", "-L", socket, ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

afterAll(() => {
  tmux("kill-server");
  tmp.cleanup();
});

function screen(): string {
  return tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", session).out;
}

/** Wait (bounded) until the pane shows `pattern` `count` times. */
async function waitFor(pattern: RegExp | string, count = 1, timeoutMs = 10000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let text = "";
  while (Date.now() < deadline) {
    text = screen();
    const n =
      typeof pattern === "string"
        ? text.split(pattern).length - 1
        : (text.match(new RegExp(pattern, "gm")) ?? []).length;
    if (n >= count) return text;
    await Bun.sleep(100);
  }
  throw new Error(`timed out waiting for ${pattern} (x${count}); screen:\n${text}`);
}

/** Starts `script repl` in a 160×50 tmux pane with its own HOME and state dir (plus `env`). */
function startRepl(stateDir: string, env: string[] = []) {
  const envs = [
    `HOME=${path.join(tmp.dir, "home")}`,
    `OUTPOST_AGENT_STATE_DIR=${stateDir}`,
    `PATH=${process.env.PATH}`,
    ...env,
  ];
  return tmux(
    "new-session",
    "-d",
    "-s",
    session,
    "-x",
    "160",
    "-y",
    "50",
    "env",
    ...envs,
    BUN,
    AGENT_MAIN,
    "script",
    "repl",
  );
}

function type(line: string) {
  tmux("send-keys", "-t", session, "-l", line);
  tmux("send-keys", "-t", session, "Enter");
}

describe("script repl under tmux", () => {
  test("evaluates with the builtins, continues lines, keeps _ and history, refuses sandbox escapes", async () => {
    const stateDir = path.join(tmp.dir, "state");
    expect(startRepl(stateDir, ["OUTPOST_AGENT_EXEC_ALLOWLIST=/bin/echo"]).code).toBe(0);
    await waitFor("outpost> ");
    type("1 + 2");
    await waitFor(/^3$/);
    type('read_file("/proc/loadavg").trim().split(" ").length');
    await waitFor(/^5$/);
    type("function f() {");
    await waitFor("... ");
    type("  return 40 + 2 }");
    type("f()");
    await waitFor(/^42$/);
    type("_ + 1");
    await waitFor(/^43$/);
    // Up arrow recalls the previous line from history; running it again uses the new `_`.
    tmux("send-keys", "-t", session, "Up");
    tmux("send-keys", "-t", session, "Enter");
    await waitFor(/^44$/);
    type('exec_cmd("/bin/echo", ["from", "sandbox"])');
    await waitFor(/^"from sandbox"$/);
    type('JSON.parse(await exec_cmd("/bin/echo", ["[1, 2]"])).length');
    await waitFor(/^2$/);
    type('read_file("/etc/shadow")');
    await waitFor("io error: read_file: path is not allowlisted: /etc/shadow");
    type('exec_cmd("/bin/sh", ["-c", "id"])');
    await waitFor("io error: exec_cmd: command is not allowlisted: /bin/sh");
    type("({}).constructor.constructor('return typeof process')()");
    await waitFor(/^"undefined"$/);
    type("for (;;) {}");
    await waitFor("timeout error: script exceeded its time limit", 1, 15000);
    type("let kept = 7; kept * 6");
    await waitFor(/^42$/, 2);
    // a memory bomb leaves that WebAssembly instance unusable: the REPL starts a fresh sandbox and says so
    type("const bomb = []; for (;;) bomb.push('x'.repeat(1 << 20) + bomb.length)");
    await waitFor("script exceeded its memory limit of 64 MiB", 1, 20000);
    await waitFor("(the sandbox was reset after this error: earlier definitions and _ are gone)");
    type("typeof kept");
    await waitFor(/^"undefined"$/, 2);
    type("6 * 7");
    await waitFor(/^42$/, 3);
    expect(screen()).not.toContain("sandbox was closed");
    type(".exit");
    const deadline = Date.now() + 10000;
    while (Date.now() < deadline && tmux("has-session", "-t", session).code === 0) await Bun.sleep(100);
    expect(tmux("has-session", "-t", session).code).not.toBe(0);
    const history = fs.readFileSync(path.join(stateDir, "repl_history"), "utf8");
    expect(history).toContain("1 + 2\n");
    expect(history).toContain("_ + 1\n");
    expect(fs.statSync(path.join(stateDir, "repl_history")).mode & 0o777).toBe(0o600);
  }, 60000);

  test("history from a previous session is available with the Up arrow", async () => {
    const stateDir = path.join(tmp.dir, "state");
    fs.writeFileSync(path.join(stateDir, "repl_history"), "6 * 7\n", { mode: 0o600 });
    expect(startRepl(stateDir).code).toBe(0);
    await waitFor("outpost> ");
    tmux("send-keys", "-t", session, "Up");
    await waitFor("outpost> 6 * 7");
    tmux("send-keys", "-t", session, "Enter");
    await waitFor(/^42$/);
    tmux("send-keys", "-t", session, "C-d");
    const deadline = Date.now() + 10000;
    while (Date.now() < deadline && tmux("has-session", "-t", session).code === 0) await Bun.sleep(100);
    expect(tmux("has-session", "-t", session).code).not.toBe(0);
  }, 60000);
});
