// read_file and exec_cmd called directly (no sandbox around them): each rule of their policies at its edge.
import { afterAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import {
  type ExecPolicy,
  execCmdBuiltin,
  resolveAllowedCommand,
  sanitizedEnv,
} from "../../agent/builtins/exec-cmd.ts";
import { createBuiltins, protectedPaths } from "../../agent/builtins/index.ts";
import { type ReadFilePolicy, readFileBuiltin } from "../../agent/builtins/read-file.ts";
import { tempDir, testConfig } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const at = (...parts: string[]) => path.join(tmp.dir, ...parts);
const never = new AbortController().signal;

fs.mkdirSync(at("pub", "sub"), { recursive: true });
fs.mkdirSync(at("pub", "private"));
fs.mkdirSync(at("secret"));
fs.writeFileSync(at("pub", "a.txt"), "A");
fs.writeFileSync(at("pub", "private", "key"), "K");
fs.writeFileSync(at("pub", "privateer.txt"), "P");
fs.writeFileSync(at("secret", "token"), "S");
fs.writeFileSync(at("exact.txt"), "E");
fs.writeFileSync(at("exact.txt.bak"), "B");
fs.writeFileSync(at("four.txt"), "1234");
fs.writeFileSync(at("five.txt"), "12345");
fs.symlinkSync(at("secret", "token"), at("pub", "to-secret"));
fs.symlinkSync(at("pub", "a.txt"), at("pub", "to-a"));
fs.symlinkSync(at("secret", "token"), at("exact-link"));
fs.symlinkSync(at("pub", "private", "key"), at("pub", "to-private"));
execFileSync("mkfifo", [at("pub", "fifo")]);

const policy: ReadFilePolicy = {
  allowlist: [
    `${at("pub")}/`,
    at("exact.txt"),
    at("exact-link"),
    at("four.txt"),
    at("five.txt"),
    at("secret"),
  ],
  denylist: [at("elsewhere"), at("pub", "private")],
  maxBytes: 4,
};

function readError(p: unknown): string {
  try {
    readFileBuiltin(policy, p);
  } catch (error) {
    expect((error as Error).name).toBe("IoError");
    return (error as Error).message;
  }
  return "read";
}

describe("read_file", () => {
  test("reads allowlisted files: exact entries, and anything below a directory entry", () => {
    expect(readFileBuiltin(policy, at("exact.txt"))).toBe("E");
    expect(readFileBuiltin(policy, at("pub", "a.txt"))).toBe("A");
    expect(readFileBuiltin(policy, at("pub", "privateer.txt"))).toBe("P");
    expect(readFileBuiltin(policy, at("pub", "to-a"))).toBe("A");
  });

  test("an exact entry is that file only; a directory entry needs its slash", () => {
    expect(readError(at("exact.txt.bak"))).toContain("not allowlisted");
    expect(readError(at("secret", "token"))).toContain("not allowlisted");
    expect(readError(`${at("pub")}x/a.txt`)).toContain("not allowlisted");
  });

  test("only absolute, normalised paths", () => {
    for (const bad of [undefined, 1, ""]) expect(readError(bad)).toContain("non-empty string");
    expect(readError("pub/a.txt")).toContain("absolute");
    for (const bad of [`${at("pub")}/sub/../a.txt`, `${at("pub")}//a.txt`, `${at("pub")}/./a.txt`])
      expect(readError(bad)).toContain("normalised");
    expect(readError(`${at("pub", "a.txt")}\0`)).toContain("normalised");
  });

  test("the deny list wins, by path and by real path, for the entry and everything below it", () => {
    expect(readError(at("pub", "private", "key"))).toContain("not allowlisted");
    expect(readError(at("pub", "to-private"))).toContain("not allowlisted");
    expect(readError(at("pub", "private"))).toContain("not allowlisted");
  });

  test("through a directory entry, a symlink must resolve inside the allowlist; an exact entry is trusted", () => {
    expect(readError(at("pub", "to-secret"))).toContain("resolves outside");
    expect(readFileBuiltin(policy, at("exact-link"))).toBe("S");
  });

  test("missing files, directories and FIFOs are refused without blocking", () => {
    expect(readError(at("pub", "missing.txt"))).toContain("ENOENT");
    expect(readError(at("pub", "sub"))).toContain("not a regular file");
    expect(readError(at("pub", "fifo"))).toContain("not a regular file");
  });

  test("at most maxBytes", () => {
    expect(readFileBuiltin(policy, at("four.txt"))).toBe("1234");
    expect(readError(at("five.txt"))).toContain("exceeds 4 bytes");
  });

  test("every read closes its file, refused or not", () => {
    // Descriptors open on the files read: other tests in this process open and close their own meanwhile.
    const targets = new Set([at("four.txt"), at("five.txt")].map((file) => fs.realpathSync(file)));
    const open = () =>
      fs.readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return targets.has(fs.readlinkSync(`/proc/self/fd/${fd}`));
        } catch {
          return false; // closed since the listing
        }
      }).length;
    for (let i = 0; i < 20; i++) {
      readFileBuiltin(policy, at("four.txt"));
      readError(at("five.txt"));
    }
    expect(open()).toBe(0);
  });
});

describe("exec_cmd", () => {
  test("the environment: fixed safe values, extras only with a plain name that is not blocked", () => {
    const env = sanitizedEnv({
      FOO: "1",
      _X9: "2",
      PATHX: "3",
      ENVY: "4",
      XLD_Y: "5",
      MY_PATH: "6",
      PATH: "/tmp",
      HOME: "/home/x",
      LD_PRELOAD: "x",
      DYLD_X: "x",
      "BASH_FUNC_f%%": "x",
      BASH_ENV: "x",
      ENV: "x",
      NODE_OPTIONS: "x",
      PYTHONPATH: "x",
      IFS: "x",
      SHELLOPTS: "x",
      "A-B": "x",
      "1A": "x",
      "A ": "x",
    });
    expect(env).toEqual({
      PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      HOME: "/home/x",
      LANG: "C.UTF-8",
      LC_ALL: "C.UTF-8",
      TMPDIR: "/tmp",
      FOO: "1",
      _X9: "2",
      PATHX: "3",
      ENVY: "4",
      XLD_Y: "5",
      MY_PATH: "6",
    });
    expect(sanitizedEnv({}).HOME).toBe("/");
  });

  test("commands: an exact absolute path, or a basename that names one entry", () => {
    const list = ["/bin/echo", "/usr/bin/env", "/usr/local/bin/env"];
    expect(resolveAllowedCommand(list, "/bin/echo")).toBe("/bin/echo");
    expect(resolveAllowedCommand(list, "echo")).toBe("/bin/echo");
    const refused = (l: string[], cmd: unknown) => {
      let error: unknown;
      try {
        resolveAllowedCommand(l, cmd);
      } catch (e) {
        error = e;
      }
      expect((error as Error | undefined)?.name).toBe("IoError");
    };
    const message = (l: string[], cmd: unknown) => {
      try {
        resolveAllowedCommand(l, cmd);
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(message([], "echo")).toBe("exec_cmd: capability is not configured (exec_allowlist is empty)");
    expect(message(list, "")).toBe("exec_cmd: command must be a non-empty string");
    expect(message(list, "bin/echo")).toBe(
      "exec_cmd: command must be a basename or an absolute path: bin/echo",
    );
    refused([], "/bin/echo");
    refused(list, "");
    refused(list, 1);
    refused(list, "env"); // two entries
    refused(list, "/bin/sh");
    refused(list, "/bin/../bin/echo");
    refused(["/bin/../bin/echo"], "/bin/../bin/echo");
    refused(list, "bin/echo");
    refused(list, "ech");
  });

  const exec: ExecPolicy = {
    allowlist: ["/bin/echo", "/usr/bin/env", "/bin/pwd", "/bin/sh", "/bin/sleep", "/usr/bin/head"],
    timeoutMs: 5000,
    maxOutputBytes: 4096,
    workDir: tmp.dir,
    extraEnv: { OUTPOST_X: "y" },
    user: null,
    group: null,
  };
  const run = (cmd: string, args?: unknown, p: ExecPolicy = exec, signal = never) =>
    execCmdBuiltin(p, cmd, args, signal);
  const failure = (promise: Promise<string>) =>
    promise.then(
      () => "ran",
      (error: Error) => `${error.name}: ${error.message}`,
    );

  test("runs in the work directory with the sanitised environment; stdout trimmed", async () => {
    expect(await run("pwd")).toBe(fs.realpathSync(tmp.dir));
    const env = await run("env", null);
    expect(env.split("\n").sort()).toEqual(
      Object.entries(sanitizedEnv({ OUTPOST_X: "y" }))
        .map(([k, v]) => `${k}=${v}`)
        .sort(),
    );
    expect(await run("echo", [" a "])).toBe("a");
    expect(await run("echo")).toBe("");
  });

  test("args: at most 64 strings of at most 4096 characters, no NUL", async () => {
    expect(await run("echo", Array(64).fill("") as string[])).toBe("");
    expect(await failure(run("echo", Array(65).fill("")))).toContain("IoError: exec_cmd: args");
    const long = "a".repeat(4096);
    expect(await run("sh", ["-c", `test \${#1} -eq 4096 && echo ok`, "x", long])).toBe("ok");
    expect(await failure(run("echo", [`${long}a`]))).toContain("IoError: exec_cmd: args");
    expect(await failure(run("echo", ["a\0b"]))).toContain("IoError: exec_cmd: args");
    expect(await failure(run("echo", [1]))).toContain("IoError: exec_cmd: args");
    expect(await failure(run("echo", [["a"]]))).toContain("IoError: exec_cmd: args");
    expect(await failure(run("echo", "a"))).toContain("IoError: exec_cmd: args");
  });

  test("the configured user runs the command; an unknown user or a missing program is an IoError", async () => {
    expect(await run("sh", ["-c", "id -u"], { ...exec, user: "nobody" })).toBe("65534");
    expect(await failure(run("echo", [], { ...exec, user: "no-such-user-x" }))).toStartWith(
      "IoError: exec_cmd: ",
    );
    expect(
      await failure(run("/nonexistent/cmd", [], { ...exec, allowlist: ["/nonexistent/cmd"] })),
    ).toStartWith("IoError: exec_cmd: cannot start /nonexistent/cmd");
  });

  test("stderr in the error is trimmed and cut to 500 characters", async () => {
    const message = await failure(run("sh", ["-c", "printf '%0600d\\n' 0 >&2; exit 1"]));
    expect(message).toBe(`IoError: exec_cmd: /bin/sh exited with code 1: ${"0".repeat(500)}`);
  });

  test("a non-zero exit is an IoError with the exit code and stderr", async () => {
    expect(await failure(run("sh", ["-c", "echo oops >&2; exit 3"]))).toBe(
      "IoError: exec_cmd: /bin/sh exited with code 3: oops",
    );
    expect(await failure(run("sh", ["-c", "exit 4"]))).toBe("IoError: exec_cmd: /bin/sh exited with code 4");
  });

  test("output: exactly maxOutputBytes is fine, one more kills the command", async () => {
    const small = { ...exec, maxOutputBytes: 8 };
    expect(await run("sh", ["-c", "printf 12345678"], small)).toBe("12345678");
    expect(await failure(run("sh", ["-c", "printf 123456789; exec sleep 10"], small))).toBe(
      "IoError: exec_cmd: /bin/sh output exceeded 8 bytes",
    );
    // stderr is capped too, but does not end the command.
    expect(await run("sh", ["-c", "head -c 100000 /dev/zero >&2; echo done"], small)).toBe("done");
    // The cap holds across chunks: the first 8 bytes of stderr, whatever the chunks after it.
    const chunks =
      "printf 12345 >&2; sleep 0.1; printf abcdefghij >&2; sleep 0.1; printf KLMNOPQRSTUVWXYZ >&2; exit 1";
    expect(await failure(run("sh", ["-c", chunks], small))).toBe(
      "IoError: exec_cmd: /bin/sh exited with code 1: 12345abc",
    );
  });

  test("a kill reaches what the command started: a shell's child does not keep the script waiting", async () => {
    const started = performance.now();
    // The shell ignores SIGTERM and its child holds the output open: only SIGKILL to the group ends both.
    const message = await failure(
      run("sh", ["-c", "trap '' TERM; sleep 10; echo late"], { ...exec, timeoutMs: 200 }),
    );
    expect(message).toBe("IoError: exec_cmd: /bin/sh timed out after 200 ms");
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test("the timeout and the script's abort kill the command", async () => {
    expect(await failure(run("sleep", ["10"], { ...exec, timeoutMs: 200 }))).toBe(
      "IoError: exec_cmd: /bin/sleep timed out after 200 ms",
    );
    const abort = new AbortController();
    const pending = failure(run("sleep", ["10"], exec, abort.signal));
    abort.abort();
    expect(await pending).toBe("IoError: exec_cmd: /bin/sleep aborted");
  });
});

describe("the builtins of a script run", () => {
  const config = testConfig(tmp.dir, {
    read_file_allowlist: [`${tmp.dir}/`],
    exec_allowlist: ["/bin/sleep"],
    exec_timeout_ms: 10_000,
    script_timeout_ms: 300,
  });

  test("agent state, scripts, the SSH keys' folder, the config file and /etc/outpost are never readable", () => {
    expect(protectedPaths(config, "/etc/agent.yaml")).toEqual([
      config.state_dir,
      config.scripts_dir,
      path.dirname(config.authorized_keys_path),
      "/etc/agent.yaml",
      "/etc/outpost",
    ]);
    expect(protectedPaths(config, null)).not.toContain("");
    fs.mkdirSync(config.state_dir, { recursive: true });
    fs.writeFileSync(path.join(config.state_dir, "token"), "T");
    const builtins = createBuiltins(config, "t");
    expect(() => builtins.read_file!.fn([path.join(config.state_dir, "token")], never)).toThrow(
      "not allowlisted",
    );
    expect(builtins.read_file!.fn([at("exact.txt")], never)).toBe("E");
  });

  test("exec_cmd gets at most the script's own time limit", async () => {
    const builtins = createBuiltins(config, "t");
    const outcome = await (builtins.exec_cmd!.fn(["sleep", ["10"]], never) as Promise<string>).catch(
      (e: Error) => e.message,
    );
    expect(outcome).toBe("exec_cmd: /bin/sleep timed out after 300 ms");
  });
});
