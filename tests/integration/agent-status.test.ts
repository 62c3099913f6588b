// `outpost-agent status` is another process than the daemon: it tells the running daemon's tunnel state
// (from the daemon's state file), not that of a tunnel client of its own, and says so when no daemon
// runs — after a clean stop, and after a killed daemon left its file behind.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import path from "node:path";
import { daemonStatePath } from "../../agent/daemon-state";
import { saveCredentials } from "../../agent/state";
import { freePort, runAgent, tempDir } from "../agent/helpers";
import { approvedDevice } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { spawnAgent } from "../helpers/process";
import { startDeviceWeb, waitFor } from "../remote-access/helpers";
import { waitForFirstHeartbeat } from "../terminal/helpers";

const app = await startTestApp({ BASE_DOMAIN: "status.test", TUNNEL_HTTP_PORT: String(await freePort()) });
const tunnel = app.running.tunnel!;
const operator = await app.token("operator");
const web = startDeviceWeb("status");
const tmp = tempDir();
const agents: ReturnType<typeof spawnAgent>[] = [];

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  web.stop();
  tmp.cleanup();
});

async function agentDevice() {
  const device = await approvedDevice(app);
  const state = path.join(tmp.dir, device.id);
  saveCredentials(state, { uuid: device.id, token: device.token });
  const settings = {
    server_url: app.url,
    state_dir: state,
    authorized_keys_path: path.join(state, "ssh", "authorized_keys"),
    install_builtin_scripts: "false",
    poll_interval_s: "60",
    log_level: "error",
    "tunnel.server": `127.0.0.1:${tunnel.sshPort}`,
    "tunnel.web_target": `http://127.0.0.1:${web.port}`,
  };
  const agent = spawnAgent(settings);
  agents.push(agent);
  await waitForFirstHeartbeat(app.database.sql, device.id, 30_000);
  // `status` with the same configuration as the daemon (the environment the daemon got).
  const env = Object.fromEntries(
    Object.entries(settings).map(([key, value]) => [
      `OUTPOST_AGENT_${key.replace(/\./g, "_").toUpperCase()}`,
      value,
    ]),
  );
  const status = async () => {
    const result = await runAgent(["status", "--json"], env);
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout) as {
      daemon: { running: boolean; pid?: number; reason?: string };
      tunnel: { state: string; since?: string } | null;
    };
  };
  const text = async () => (await runAgent(["status"], env)).stdout;
  return { device, agent, state, status, text };
}

describe("outpost-agent status and the running daemon", () => {
  test("a connected tunnel is reported as connected; a stopped daemon as no daemon", async () => {
    const { device, agent, state, status, text } = await agentDevice();
    expect((await status()).tunnel?.state).toBe("disconnected");
    const opened = await app.fetch(`/api/v1/devices/${device.id}/remote_access`, {
      method: "POST",
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(opened.status).toBe(201);
    await waitFor(() => tunnel.registry.get(device.id) !== undefined, 15_000, "the tunnel up");
    const report = await status();
    expect(report.daemon).toMatchObject({ running: true, pid: agent.agent.pid });
    expect(report.tunnel?.state).toBe("connected");
    expect(report.tunnel?.since).toMatch(/^\d{4}-\d\d-\d\dT/);
    const lines = (await text()).split("\n");
    expect(lines.find((l) => l.startsWith("Daemon:"))).toStartWith(
      `Daemon:     running, PID ${agent.agent.pid}, since `,
    );
    expect(lines.find((l) => l.startsWith("Tunnel:"))).toStartWith("Tunnel:     connected (since ");

    await agent.stop();
    expect(existsSync(daemonStatePath(state))).toBe(false);
    const stopped = await status();
    expect(stopped.daemon).toEqual({ running: false, reason: "no daemon state" });
    expect(stopped.tunnel).toBeNull();
    expect(await text()).toContain("Tunnel:     unknown: no agent daemon is running");
  }, 90_000);

  test("a killed daemon's state file is stale: no daemon", async () => {
    const { agent, state, status } = await agentDevice();
    const pid = agent.agent.pid;
    expect((await status()).daemon.running).toBe(true);
    agent.agent.kill("SIGKILL");
    await agent.agent.exited;
    expect(existsSync(daemonStatePath(state))).toBe(true);
    const report = await status();
    expect(report.daemon).toEqual({
      running: false,
      reason: `stale state of PID ${pid}, which is not running`,
    });
    expect(report.tunnel).toBeNull();
  }, 60_000);
});
