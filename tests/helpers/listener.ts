import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";

/**
 * A port for a test's own listener: below the kernel's ephemeral range (32768+), where the outgoing
 * connections of every test worker take their local ports, so only another listener can hold it.
 */
export function randomListenPort(): number {
  return 20_000 + Math.floor(Math.random() * 12_000);
}

/**
 * Everything a child prints on stdout and stderr, read to the end as it comes (a child whose pipe is
 * never drained blocks once the pipe is full); `done` once both streams ended.
 */
export function collectOutput(child: Subprocess<"ignore", "pipe", "pipe">): {
  /** Both streams as they came. */
  readonly text: string;
  /** Each stream on its own. */
  readonly stdout: string;
  readonly stderr: string;
  done: Promise<void>;
} {
  const output = { text: "", stdout: "", stderr: "", done: Promise.resolve() };
  const collect = async (stream: ReadableStream<Uint8Array>, name: "stdout" | "stderr") => {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      const text = decoder.decode(chunk.value, { stream: true });
      output.text += text;
      output[name] += text;
    }
  };
  output.done = Promise.all([collect(child.stdout, "stdout"), collect(child.stderr, "stderr")]).then(
    () => undefined,
  );
  return output;
}

export interface ListeningProcess {
  process: Subprocess<"ignore", "pipe", "pipe">;
  port: number;
  /** What the server printed so far (stdout and stderr). */
  log(): string;
  /** SIGTERM, then waits for it to exit (SIGKILL after 5 s). */
  stop(): Promise<void>;
}

/**
 * Starts a server (sshd, Mosquitto, Caddy) on a free loopback port and returns once the server itself says it
 * listens. A port found free can be taken before the server binds it, and then "does the port answer"
 * would be answered by someone else's listener: so readiness is the server's own log line, and a server
 * that exits first ("Address already in use") is started again on another port, at most 5 times.
 */
export async function startListening(options: {
  /** The command line for `port` (it may write a config file naming the port first). */
  command: (port: number) => string[];
  /** The line the server prints once it listens on `port`. */
  ready: (port: number) => string;
  /** The whole environment, if not this process's. */
  env?: Record<string, string>;
  timeoutMs?: number;
}): Promise<ListeningProcess> {
  const failures: string[] = [];
  for (let attempt = 1; attempt <= 5; attempt++) {
    const port = randomListenPort();
    const command = options.command(port);
    const started = await startOn(port, command, options);
    if ("process" in started) return started;
    failures.push(`${command[0]} on port ${port}: ${started.failure}`);
  }
  throw new Error(`the server did not start:\n${failures.join("\n")}`);
}

async function startOn(
  port: number,
  command: string[],
  options: { ready: (port: number) => string; env?: Record<string, string>; timeoutMs?: number },
): Promise<ListeningProcess | { failure: string }> {
  const ready = options.ready(port);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const child = Bun.spawn(command, { env: options.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const output = collectOutput(child);
  const deadline = Date.now() + timeoutMs;
  while (!output.text.includes(ready)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      await Promise.race([output.done, Bun.sleep(1_000)]);
      return {
        failure: child.exitCode === null ? `not ready after ${timeoutMs} ms: ${output.text}` : output.text,
      };
    }
    await Bun.sleep(20);
  }
  return {
    process: child,
    port,
    log: () => output.text,
    async stop() {
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await child.exited;
      clearTimeout(killer);
    },
  };
}

/**
 * A real OpenSSH sshd on loopback, in the foreground, logging to its stderr: `sshd_config` in `dir` is
 * the shared base (host key `hostKey`, keys only) plus `lines`. Sessions get `HOME` = `dir`/home, an
 * empty directory, as a device's support user has: the machine's own login files (root's .bashrc, say,
 * which on some machines waits a minute for a stale pyenv lock) are not what a test measures.
 */
export function startSshd(dir: string, hostKey: string, lines: string[] = []): Promise<ListeningProcess> {
  mkdirSync("/run/sshd", { recursive: true, mode: 0o755 }); // its privilege-separation directory
  const home = path.join(dir, "home");
  mkdirSync(home, { recursive: true });
  const config = path.join(dir, "sshd_config");
  const base = [
    "ListenAddress 127.0.0.1",
    `HostKey ${hostKey}`,
    "PidFile none",
    "UsePAM no",
    "StrictModes no",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    `SetEnv HOME=${home}`,
  ];
  writeFileSync(config, `${[...base, ...lines].join("\n")}\n`);
  return startListening({
    command: (port) => ["/usr/sbin/sshd", "-D", "-e", "-f", config, "-p", String(port)],
    ready: (port) => `Server listening on 127.0.0.1 port ${port}.`,
  });
}
