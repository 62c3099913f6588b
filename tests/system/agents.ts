// The system suite's devices: the compiled agent, installed by the console's own install one-liner
// (fetched over https through Caddy, as an operator pastes it) into a throwaway root per device, each
// with its own data directory and network interface (so its own MAC), and run as the daemon.
import { afterAll } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Subprocess } from "bun";
import { tempDir } from "../agent/helpers";
import { collectOutput, type ListeningProcess } from "../helpers/listener";
import { startDeviceWeb } from "../remote-access/helpers";
import { LOGIN_USER, startDeviceSshd } from "../terminal/helpers";
import { CONSOLE_HOST, type Fleet } from "./fleet";

const ZERO_MAC = "00:00:00:00:00:00";
/** What the devices made, undone after the file (hooks registered inside a test would run after it). */
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * Three network interfaces with distinct hardware addresses: the machine's own where it has them, else
 * dummy links made for the run (root) and removed after it. Devices are identified by MAC, so each
 * agent is told its interface (`interface` key).
 */
export function deviceInterfaces(count: number): string[] {
  const found: string[] = [];
  const macs = new Set<string>();
  for (const name of readdirSync("/sys/class/net").sort()) {
    if (name === "lo") continue;
    const mac = readFileSync(`/sys/class/net/${name}/address`, "utf8").trim().toLowerCase();
    if (mac === ZERO_MAC || mac.length !== 17 || macs.has(mac)) continue;
    macs.add(mac);
    found.push(name);
  }
  const made: string[] = [];
  while (found.length < count) {
    const name = `opsys${process.pid % 1000}x${made.length}`;
    const mac = `02:5e:00:${[process.pid >> 8, process.pid, made.length].map((b) => (b & 0xff).toString(16).padStart(2, "0")).join(":")}`;
    const ip = Bun.spawnSync(["ip", "link", "add", "name", name, "address", mac, "type", "dummy"]);
    if (ip.exitCode !== 0)
      throw new Error(
        `the system suite needs ${count} network interfaces with a MAC: ${ip.stderr.toString()}`,
      );
    made.push(name);
    found.push(name);
  }
  cleanups.push(async () => {
    for (const name of made) Bun.spawnSync(["ip", "link", "delete", name]);
  });
  return found.slice(0, count);
}

export interface Agent {
  name: string;
  dir: string;
  /** The agent's configuration file as install.sh wrote it. */
  config: string;
  /** What install.sh printed. */
  installOutput: string;
  web: ReturnType<typeof startDeviceWeb>;
  sshd: ListeningProcess;
  /** The daemon running now (undefined while stopped). */
  daemon: Subprocess<"ignore", "pipe", "pipe"> | undefined;
  log(): string;
  start(): void;
  stop(): Promise<void>;
}

/**
 * Runs the install line the console showed, plus `--server` for the agents' front and `--prefix` (a
 * throwaway root, which needs no root); curl reaches the console host through ~/.curlrc
 * (Caddy's address and its local CA), as a device's resolver and trust store would.
 */
export async function installAgent(
  fleet: Fleet,
  installLine: string,
  name: string,
  iface: string,
): Promise<Agent> {
  const tmp = tempDir(`outpost-system-${name}-`);
  const dir = tmp.dir;
  const root = path.join(dir, "root");
  writeFileSync(
    path.join(dir, ".curlrc"),
    `resolve = ${CONSOLE_HOST}:${fleet.httpsPort}:127.0.0.1\ncacert = ${fleet.caddyRoot}\n`,
  );
  const line = `${installLine} --server ${fleet.agentUrl} --prefix ${root}`;
  const install = Bun.spawn(["sh", "-c", line], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, OUTPOST_AGENT_INTERFACE: iface },
    stdout: "pipe",
    stderr: "pipe",
  });
  const killer = setTimeout(() => install.kill("SIGKILL"), 60_000);
  const [out, err, code] = await Promise.all([
    new Response(install.stdout).text(),
    new Response(install.stderr).text(),
    install.exited,
  ]);
  clearTimeout(killer);
  if (code !== 0) throw new Error(`install line failed (${code}): ${out}${err}`);

  const web = startDeviceWeb(name);
  const config = path.join(root, "etc/outpost/agent.yaml");
  const authorizedKeys = /^authorized_keys_path: (.+)$/m.exec(readFileSync(config, "utf8"))?.[1];
  if (!authorizedKeys) throw new Error(`install.sh wrote no authorized_keys_path into ${config}`);
  const { sshd } = await startDeviceSshd(dir, name, authorizedKeys);
  // What a device's own configuration adds to install.sh's: its interface, the local services the
  // tunnel reaches, the support user of this machine, and a short poll (the suite's timing knob).
  const settings: Record<string, string> = {
    OUTPOST_AGENT_INTERFACE: iface,
    OUTPOST_AGENT_POLL_INTERVAL_S: "2",
    OUTPOST_AGENT_POLL_MAX_BACKOFF_S: "2",
    OUTPOST_AGENT_LOG_LEVEL: "info",
    OUTPOST_AGENT_TUNNEL_SERVER: `127.0.0.1:${fleet.tunnelSshPort}`,
    OUTPOST_AGENT_TUNNEL_WEB_TARGET: `http://127.0.0.1:${web.port}`,
    OUTPOST_AGENT_TUNNEL_SSH_TARGET: `127.0.0.1:${sshd.port}`,
    OUTPOST_AGENT_SSH_TARGET_USER: LOGIN_USER,
    OUTPOST_AGENT_SSH_HOST_KEY_PATH: path.join(dir, "host_ed25519.pub"),
  };
  const binary = path.join(root, "usr/local/bin/outpost-agent");
  let output: { readonly text: string } = { text: "" };
  const agent: Agent = {
    name,
    dir,
    config,
    installOutput: out,
    web,
    sshd,
    daemon: undefined,
    log: () => output.text,
    start() {
      const daemon = Bun.spawn([binary, "--config", config, "poll"], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, ...settings },
        stdout: "pipe",
        stderr: "pipe",
        stdin: "ignore",
      });
      agent.daemon = daemon;
      const earlier = output;
      const collected = collectOutput(daemon);
      output = {
        get text() {
          return earlier.text + collected.text;
        },
      };
    },
    async stop() {
      const daemon = agent.daemon;
      if (!daemon) return;
      agent.daemon = undefined;
      daemon.kill("SIGTERM");
      const force = setTimeout(() => daemon.kill("SIGKILL"), 5_000);
      await daemon.exited;
      clearTimeout(force);
    },
  };
  cleanups.push(async () => {
    await agent.stop();
    await sshd.stop();
    web.stop();
    tmp.cleanup();
  });
  if (!existsSync(binary)) throw new Error(`install.sh installed no agent at ${binary}`);
  return agent;
}
