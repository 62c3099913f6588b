import { afterAll } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";
import { collectOutput, randomListenPort } from "./listener";

export const REPO = path.resolve(import.meta.dir, "../..");
export const OUTPOST = path.join(REPO, "outpost");
/** The tunnel role (inside `all`) listens on free ports in tests. */
export const TUNNEL_FREE_PORTS = {
  TUNNEL_SSH_PORT: "0",
  TUNNEL_HTTP_PORT: "0",
  TUNNEL_MUX_PORT: "0",
  TUNNEL_DATA_PORT: "0",
  TUNNEL_HOST: "127.0.0.1",
};

export interface OutpostProcess {
  process: Subprocess<"ignore", "pipe", "pipe">;
  url: string;
  output(): string;
  /** stdout and stderr on their own, as far as they came. */
  streams(): { stdout: string; stderr: string };
  /** Sends SIGINT (as Ctrl-C does) and waits for the exit code (and the output's end). */
  interrupt(): Promise<number>;
}

/** Stops the PostgreSQL running in `directory` (its pid is in postmaster.pid), if any. */
export function killEmbeddedPostgres(directory: string): void {
  const file = path.join(directory, "postmaster.pid");
  if (!existsSync(file)) return;
  const pid = Number(readFileSync(file, "utf8").split("\n")[0]);
  try {
    if (pid) process.kill(pid, "SIGQUIT");
  } catch {
    // already gone
  }
}

/**
 * Runs `./outpost start` as a real child process and waits until /readyz answers 200. Without a PORT
 * it picks one below the kernel's ephemeral range (32768+, where outgoing connections take theirs) and,
 * should another process still bind it first, starts again on another.
 */
export async function startOutpostProcess(
  env: Record<string, string>,
  timeoutMs = 30_000,
  /** false: the caller stops it (a process started inside a test: a hook registered there runs after that test). */
  stopAfterAll = true,
): Promise<OutpostProcess> {
  if (env.PORT !== undefined) return startOnPort(env, env.PORT, timeoutMs, stopAfterAll);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnPort(env, String(randomListenPort()), timeoutMs, stopAfterAll);
    } catch (error) {
      if (attempt === 5 || !/PORT \d+ is already in use/.test(String(error))) throw error;
    }
  }
}

async function startOnPort(
  env: Record<string, string>,
  port: string,
  timeoutMs: number,
  stopAfterAll: boolean,
): Promise<OutpostProcess> {
  const child = Bun.spawn([OUTPOST, "start"], {
    cwd: REPO,
    // Tunnel listeners on free ports too (the all role starts them), so parallel runs never collide.
    env: { ...process.env, LOG_LEVEL: "info", HOST: "127.0.0.1", ...TUNNEL_FREE_PORTS, ...env, PORT: port },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const output = collectOutput(child);
  if (stopAfterAll)
    afterAll(async () => {
      // A test that failed midway leaves its process running: stop it the way Ctrl-C does, so it
      // takes its embedded PostgreSQL down too, and only then force.
      if (child.exitCode !== null) return;
      child.kill("SIGINT");
      const stopped = await Promise.race([
        child.exited.then(() => true),
        Bun.sleep(15_000).then(() => false),
      ]);
      if (!stopped) {
        child.kill("SIGKILL");
        if (env.DATA_DIR) killEmbeddedPostgres(path.join(env.DATA_DIR, "postgres"));
      }
    });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  const readyPath = env.OUTPOST_ROLE === "worker" || env.OUTPOST_ROLE === "tunnel" ? undefined : "/readyz";
  while (true) {
    if (child.exitCode !== null) {
      await Promise.race([output.done, Bun.sleep(2_000)]); // its last words, e.g. "PORT … is already in use"
      throw new Error(`outpost exited with ${child.exitCode}:\n${output.text}`);
    }
    if (readyPath) {
      const ready = await fetch(`${url}${readyPath}`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ready) break;
    } else if (output.text.includes("job runner started") || output.text.includes("tunnel role listening"))
      break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`outpost not ready after ${timeoutMs} ms:\n${output.text}`);
    }
    await Bun.sleep(50);
  }
  return {
    process: child,
    url,
    output: () => output.text,
    streams: () => ({ stdout: output.stdout, stderr: output.stderr }),
    async interrupt() {
      child.kill("SIGINT");
      const code = await child.exited;
      await Promise.race([output.done, Bun.sleep(2_000)]); // its last lines, read to the end
      return code;
    },
  };
}

/** Runs an `./outpost` command to completion. */
export async function runOutpost(args: string[], env: Record<string, string>, stdin?: string) {
  const child = Bun.spawn([OUTPOST, ...args], {
    cwd: REPO,
    env: { ...process.env, LOG_LEVEL: "warn", ...TUNNEL_FREE_PORTS, ...env },
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr };
}

/**
 * A real agent daemon (`agent/main.ts poll`) whose environment holds only PATH, HOME, `settings`
 * (agent config keys such as `tunnel.server`, passed as OUTPOST_AGENT_TUNNEL_SERVER) and `options.env` (runtime
 * settings). `stop()` resumes a frozen one and ends it.
 */
export function spawnAgent(
  settings: Record<string, string>,
  options: { env?: Record<string, string>; stderr?: "inherit" | "ignore" } = {},
) {
  const env: Record<string, string> = {
    ...options.env,
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/root",
  };
  for (const [key, value] of Object.entries(settings))
    env[`OUTPOST_AGENT_${key.replace(/\./g, "_").toUpperCase()}`] = value;
  const agent = Bun.spawn(
    [path.join(REPO, "node_modules/.bin/bun"), path.join(REPO, "agent/main.ts"), "poll"],
    {
      cwd: REPO,
      env,
      stdout: "ignore",
      stderr: options.stderr ?? "ignore",
      stdin: "ignore",
    },
  );
  return {
    agent,
    async stop() {
      agent.kill("SIGCONT");
      agent.kill("SIGTERM");
      const killer = setTimeout(() => agent.kill("SIGKILL"), 5000);
      await agent.exited;
      clearTimeout(killer);
    },
  };
}
