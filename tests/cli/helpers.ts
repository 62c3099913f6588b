// The operator's CLI (`./outpost login|ssh|forward`) as a separate process, under a real pseudo-terminal
// (tmux) or with pipes, with its own XDG_CONFIG_HOME.
import { afterAll } from "bun:test";
import path from "node:path";
import { tempDir } from "../agent/helpers";

export const OUTPOST = path.resolve(import.meta.dir, "../../outpost");

/** A home for the CLI's credentials; removed after the file's tests. */
export function cliHome() {
  const home = tempDir("outpost-cli-");
  afterAll(() => home.cleanup());
  const env = (extra: Record<string, string> = {}) => ({
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home.dir,
    XDG_CONFIG_HOME: path.join(home.dir, "config"),
    ...extra,
  });
  /** Runs the CLI with pipes: its exit code and output, bounded in time. */
  async function run(
    args: string[],
    options: { env?: Record<string, string>; stdin?: string | Uint8Array; timeoutMs?: number } = {},
  ) {
    const child = Bun.spawn([OUTPOST, ...args], {
      env: env(options.env),
      stdin:
        options.stdin === undefined
          ? "ignore"
          : typeof options.stdin === "string"
            ? new TextEncoder().encode(options.stdin)
            : options.stdin,
      stdout: "pipe",
      stderr: "pipe",
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    clearTimeout(timer);
    return { code, stdout, stderr };
  }
  return { dir: home.dir, env, run };
}

/** One tmux server of this test file: windows of a fixed size, read with capture-pane. */
export function tmuxServer() {
  const socket = `outpost-cli-test-${process.pid}`;
  const tmux = (...args: string[]) => {
    const r = Bun.spawnSync(["tmux", "-L", socket, ...args], { stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
  };
  afterAll(() => tmux("kill-server"));
  return {
    tmux,
    /** Starts `command` (a shell line) in a new detached session `name` of `columns`×`rows`. */
    start(name: string, command: string, env: Record<string, string>, columns = 100, rows = 30) {
      const envs = Object.entries(env).map(([key, value]) => `${key}=${value}`);
      const started = tmux(
        "new-session",
        "-d",
        "-s",
        name,
        "-x",
        String(columns),
        "-y",
        String(rows),
        "env",
        ...envs,
        "sh",
        "-c",
        command,
      );
      if (started.code !== 0) throw new Error(`tmux new-session failed: ${started.err}`);
    },
    screen: (name: string) => tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", name).out,
    keys: (name: string, ...keys: string[]) => tmux("send-keys", "-t", name, ...keys),
    /** Waits (bounded) until the pane shows `pattern`; returns the screen. */
    async waitFor(name: string, pattern: RegExp | string, timeoutMs = 30_000): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      let text = "";
      for (let i = 0; i < 1000 && Date.now() < deadline; i++) {
        text = tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", name).out;
        if (typeof pattern === "string" ? text.includes(pattern) : pattern.test(text)) return text;
        await Bun.sleep(100);
      }
      throw new Error(`timed out waiting for ${pattern}; the pane showed:\n${text}`);
    },
  };
}
