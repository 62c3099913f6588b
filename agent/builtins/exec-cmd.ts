import path from "node:path";
import { describeIdentity, ExecIdentityError, resolveExecIdentity, spawnIdentity } from "../exec-identity.ts";
import { BuiltinIoError } from "../scripts/sandbox.ts";

export interface ExecPolicy {
  /** Absolute paths of executables scripts may run. Empty = exec_cmd denied. */
  allowlist: string[];
  timeoutMs: number;
  maxOutputBytes: number;
  workDir: string;
  extraEnv: Record<string, string>;
  /** `exec_user` / `exec_group` (see agent/exec-identity.ts); null = the default. */
  user: string | null;
  group: string | null;
}

/** Resolve the configured identity at use, so a changed /etc/passwd is honoured and a refusal is an IoError. */
function spawnIdentityFor(policy: ExecPolicy) {
  try {
    const identity = resolveExecIdentity(policy.user, policy.group);
    return { identity, ids: spawnIdentity(identity) };
  } catch (err) {
    if (err instanceof ExecIdentityError) throw new BuiltinIoError(`exec_cmd: ${err.message}`);
    throw err;
  }
}

const SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const BLOCKED_ENV =
  /^(LD_|DYLD_|BASH_FUNC_)|^(BASH_ENV|ENV|PYTHONPATH|PYTHONSTARTUP|PERL5LIB|PERL5OPT|RUBYOPT|NODE_OPTIONS|IFS|PATH|SHELLOPTS)$/;

/** The environment of executed commands: fixed safe values plus allowed extras (never inherited). */
export function sanitizedEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {
    PATH: SAFE_PATH,
    HOME: "/",
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
    TMPDIR: "/tmp",
  };
  for (const [key, value] of Object.entries(extra)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) || BLOCKED_ENV.test(key)) continue;
    env[key] = value;
  }
  return env;
}

/** Resolve `cmd` to an allowlisted absolute path (absolute paths must match exactly; a bare name must match one entry's basename). */
export function resolveAllowedCommand(allowlist: string[], cmd: unknown): string {
  if (allowlist.length === 0)
    throw new BuiltinIoError("exec_cmd: capability is not configured (exec_allowlist is empty)");
  if (typeof cmd !== "string" || cmd === "")
    throw new BuiltinIoError("exec_cmd: command must be a non-empty string");
  if (cmd.startsWith("/")) {
    if (path.posix.normalize(cmd) !== cmd || !allowlist.includes(cmd)) {
      throw new BuiltinIoError(`exec_cmd: command is not allowlisted: ${cmd}`);
    }
    return cmd;
  }
  if (cmd.includes("/"))
    throw new BuiltinIoError(`exec_cmd: command must be a basename or an absolute path: ${cmd}`);
  const candidates = allowlist.filter((p) => path.posix.basename(p) === cmd);
  if (candidates.length !== 1) throw new BuiltinIoError(`exec_cmd: command is not allowlisted: ${cmd}`);
  return candidates[0];
}

/**
 * `exec_cmd(cmd, args?)`: run an allowlisted executable directly (no shell) as the configured user and
 * group (no supplementary groups), with a sanitized environment, stdin closed, a timeout and an output
 * cap; timeout, abort and overflow kill its whole process group. Resolves to trimmed stdout; a
 * non-zero exit is an IoError.
 */
export async function execCmdBuiltin(
  policy: ExecPolicy,
  cmd: unknown,
  args: unknown,
  signal: AbortSignal,
): Promise<string> {
  const exe = resolveAllowedCommand(policy.allowlist, cmd);
  const argv = args === undefined || args === null ? [] : args;
  if (
    !Array.isArray(argv) ||
    argv.length > 64 ||
    !argv.every((a) => typeof a === "string" && a.length <= 4096 && !a.includes("\0"))
  ) {
    throw new BuiltinIoError("exec_cmd: args must be an array of at most 64 strings");
  }
  const { identity, ids } = spawnIdentityFor(policy);
  let proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  try {
    proc = Bun.spawn([exe, ...(argv as string[])], {
      cwd: policy.workDir,
      env: sanitizedEnv(policy.extraEnv),
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      // Its own process group, so a kill reaches what it started: a shell's child would otherwise
      // keep the output pipes open, and the script waiting, long after the timeout.
      detached: true,
      ...(ids ?? {}),
    });
  } catch (err) {
    const as = identity ? ` as ${describeIdentity(identity)}` : "";
    throw new BuiltinIoError(`exec_cmd: cannot start ${exe}${as}: ${(err as Error).message}`);
  }
  let killedFor: string | null = null;
  const kill = (reason: string) => {
    killedFor ??= reason;
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {
      // The group is gone: the command and all it started have exited.
    }
  };
  const timer = setTimeout(() => kill(`timed out after ${policy.timeoutMs} ms`), policy.timeoutMs);
  const onAbort = () => kill("aborted");
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const [stdout, stderr] = await Promise.all([
      readCapped(proc.stdout, policy.maxOutputBytes, () =>
        kill(`output exceeded ${policy.maxOutputBytes} bytes`),
      ),
      readCapped(proc.stderr, policy.maxOutputBytes, () => {}),
      proc.exited,
    ]);
    if (killedFor) throw new BuiltinIoError(`exec_cmd: ${exe} ${killedFor}`);
    if (proc.exitCode !== 0) {
      const detail = stderr.trim().slice(0, 500);
      throw new BuiltinIoError(
        `exec_cmd: ${exe} exited with code ${proc.exitCode}${detail ? `: ${detail}` : ""}`,
      );
    }
    return stdout.trim();
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
}

async function readCapped(
  stream: ReadableStream<Uint8Array>,
  max: number,
  onOverflow: () => void,
): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value: chunk } = await reader.read();
    if (done) break;
    if (total >= max) continue;
    const room = max - total;
    chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    total += chunk.length;
    if (total > max) onOverflow();
  }
  return Buffer.concat(chunks).toString("utf8");
}
