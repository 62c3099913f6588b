/**
 * The device's side of the remote-access benchmark as the processes a device really runs: its web UI
 * (a Bun server of its own) and the agent daemon (`agent/main.ts poll`), each in its own process, so
 * their work runs beside the server's as it would on a real device, not on the benchmark's thread.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { saveCredentials } from "../../agent/state";
import { spawnAgent } from "../../tests/helpers/process";

const REPO = path.resolve(import.meta.dir, "../..");
const BUN = path.join(REPO, "node_modules/.bin/bun");

/** Run as a script: serves `/big` from the file named by argv[2], `/` as "ok"; prints its port. */
if (import.meta.main) {
  const file = process.argv[2]!;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      return new URL(request.url).pathname === "/big" ? new Response(Bun.file(file)) : new Response("ok");
    },
  });
  console.log(server.port);
}

/** The device web UI in its own process; resolves once it listens. */
export async function startDeviceWeb(file: string) {
  const child = Bun.spawn([BUN, import.meta.path, file], {
    stdout: "pipe",
    stderr: "inherit",
    stdin: "ignore",
  });
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error("the device web server exited before listening");
    text += new TextDecoder().decode(chunk.value);
  }
  reader.releaseLock();
  return {
    port: Number(text.trim()),
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}

export interface AgentProcessOptions {
  serverUrl: string;
  stateDir: string;
  credentials: { uuid: string; token: string };
  tunnelServer: string;
  webTarget: string;
  pollIntervalS: number;
  longPoll: boolean;
}

/** The runtime settings the agent's systemd unit starts it with (`Environment=` lines). */
function unitEnvironment(): Record<string, string> {
  const unit = readFileSync(path.join(REPO, "deploy/outpost-agent.service"), "utf8");
  const pairs = [...unit.matchAll(/^Environment=(.*)$/gm)].flatMap((line) => line[1]!.trim().split(/\s+/));
  return Object.fromEntries(
    pairs.map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
  );
}

/** The agent daemon for a registered device, in its own process, run as its systemd unit runs it. */
export function startAgent(options: AgentProcessOptions) {
  saveCredentials(options.stateDir, options.credentials);
  return spawnAgent(
    {
      server_url: options.serverUrl,
      state_dir: options.stateDir,
      authorized_keys_path: path.join(options.stateDir, "ssh", "authorized_keys"),
      install_builtin_scripts: "false",
      poll_interval_s: String(options.pollIntervalS),
      long_poll: String(options.longPoll),
      // The agents of this benchmark share the machine's MAC: their identity warnings are expected.
      log_level: "error",
      "tunnel.server": options.tunnelServer,
      "tunnel.web_target": options.webTarget,
    },
    { env: unitEnvironment(), stderr: "inherit" },
  );
}
