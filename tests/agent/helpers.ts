import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { DeviceApiClient } from "../../agent/api-client.ts";
import { type AgentConfig, defaultConfig } from "../../agent/config.ts";
import { silentLogger } from "../../agent/logger.ts";
import type { AgentContext } from "../../agent/poller.ts";
import { ScriptStore } from "../../agent/scripts/store.ts";
import { DisabledTunnel } from "../../agent/tunnel.ts";
import { systemClock } from "../../shared/clock.ts";

export const REPO_ROOT = path.resolve(import.meta.dir, "../..");
export const BUN = path.join(REPO_ROOT, "node_modules/.bin/bun");
export const AGENT_MAIN = path.join(REPO_ROOT, "agent/main.ts");

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = "outpost-agent-test-"): { dir: string; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Defaults rooted in a temp directory, with short limits suitable for tests. */
export function testConfig(dir: string, overrides: Partial<AgentConfig> = {}): AgentConfig {
  const config = defaultConfig(path.join(dir, "state"));
  config.authorized_keys_path = path.join(dir, "ssh", "authorized_keys");
  config.script_timeout_ms = 2000;
  config.script_warn_ms = 1000;
  config.script_memory_mb = 32;
  return { ...config, ...overrides };
}

export const logger = silentLogger();

/** Build script text with front matter. */
export function scriptText(
  name: string,
  version: number | string,
  body: string,
  schema = "type: object",
): string {
  const indented = schema
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
  return `/*---\nname: ${name}\nversion: ${version}\nschema:\n${indented}\n---*/\n${body}\n`;
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Wait until a TCP port accepts connections (bounded). */
export async function waitForPort(port: number, timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    await Bun.sleep(50);
  }
  throw new Error(`port ${port} did not open within ${timeoutMs} ms`);
}

/** Wait (bounded) for an executable to exist, e.g. while apt is still installing it. */
export async function waitForFile(file: string, timeoutMs = 120000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (fs.existsSync(file)) return true;
    await Bun.sleep(1000);
  }
  return fs.existsSync(file);
}

/** Run the agent CLI (from source) as a subprocess. */
export async function runAgent(
  args: string[],
  env: Record<string, string> = {},
  options: { cwd?: string; timeoutMs?: number; executable?: string[] } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const cmd = options.executable ?? [BUN, AGENT_MAIN];
  const proc = Bun.spawn([...cmd, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root", ...env },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), options.timeoutMs ?? 30000);
  const [stdout, stderr] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  await proc.exited;
  clearTimeout(timer);
  return { code: proc.exitCode ?? -1, stdout, stderr };
}

/** What the poll loop runs with: `config`, one tiny installed script, a silent log, no tunnel. */
export function pollerContext(config: AgentConfig): AgentContext {
  const store = new ScriptStore(config.scripts_dir);
  store.install(scriptText("tiny", 1, "function main() { return { ok: true }; }"), { force: true });
  return {
    config,
    configSource: null,
    logger,
    store,
    api: new DeviceApiClient(config.server_url, 10000),
    tunnel: new DisabledTunnel(),
    startedAt: Date.now(),
    clock: systemClock,
  };
}
