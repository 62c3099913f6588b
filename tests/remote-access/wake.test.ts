// A real agent process polling every 60 s starts its tunnel within seconds of a lease opening, and runs a
// queued command within seconds, because it holds a wait on the server between polls (long_poll). With
// long_poll off, nothing happens before its next poll.
import { afterAll, describe, expect, test } from "bun:test";
import path from "node:path";
import { saveCredentials } from "../../agent/state";
import { queueCommand } from "../../modules/commands/service";
import { freePort, tempDir } from "../agent/helpers";
import { approvedDevice } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { spawnAgent } from "../helpers/process";
import { waitForFirstHeartbeat } from "../terminal/helpers";
import { startDeviceWeb, waitFor } from "./helpers";

const app = await startTestApp({ BASE_DOMAIN: "remote.test", TUNNEL_HTTP_PORT: String(await freePort()) });
const tunnel = app.running.tunnel!;
const operator = await app.token("operator");
const web = startDeviceWeb("wake");
const tmp = tempDir();
const agents: ReturnType<typeof spawnAgent>[] = [];

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  web.stop();
  tmp.cleanup();
});

/** An approved device whose real agent process polls every 60 s; resolves after its first heartbeat. */
async function agentDevice(longPoll: boolean) {
  const device = await approvedDevice(app);
  const state = path.join(tmp.dir, device.id);
  saveCredentials(state, { uuid: device.id, token: device.token });
  const agent = spawnAgent({
    server_url: app.url,
    state_dir: state,
    authorized_keys_path: path.join(state, "ssh", "authorized_keys"),
    install_builtin_scripts: "false",
    poll_interval_s: "60",
    long_poll: String(longPoll),
    log_level: "error",
    "tunnel.server": `127.0.0.1:${tunnel.sshPort}`,
    "tunnel.web_target": `http://127.0.0.1:${web.port}`,
  });
  agents.push(agent);
  await waitForFirstHeartbeat(app.database.sql, device.id, 30_000);
  return device;
}

async function openLease(deviceId: string) {
  const response = await app.fetch(`/api/v1/devices/${deviceId}/remote_access`, {
    method: "POST",
    headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
    body: "{}",
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { data: { lease_id: string } }).data.lease_id;
}

async function commandStatus(id: string) {
  const [row] = await app.database.sql<
    { status: string }[]
  >`select status from pending_commands where id = ${id}`;
  return row!.status;
}

describe("an agent woken between its polls", () => {
  test("lease opened → tunnel up within 6 s (not at the next poll, 60 s later); a queued command runs within seconds; the lease's end stops the tunnel", async () => {
    const device = await agentDevice(true);
    await waitFor(() => app.services.deviceWaits.heldFor(device.id) > 0, 10_000, "the agent's wait");
    const opened = performance.now();
    const leaseId = await openLease(device.id);
    await waitFor(() => tunnel.registry.get(device.id) !== undefined, 6_000, "the tunnel within 6 s");
    const tunnelUpMs = performance.now() - opened;
    expect(tunnelUpMs).toBeLessThan(6_000);

    const queued = await queueCommand(app.database.sql, {
      deviceId: device.id,
      type: "list_scripts",
      ttlSeconds: 600,
    });
    await waitFor(
      async () => (await commandStatus(queued.id)) === "succeeded",
      10_000,
      "the command's result",
    );

    const ended = await app.fetch(`/api/v1/devices/${device.id}/remote_access/${leaseId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${operator}` },
    });
    expect(ended.status).toBe(204);
    await waitFor(() => tunnel.registry.get(device.id) === undefined, 10_000, "the tunnel down");
    // The agent learnt it too (its wait answered, it polled): it holds no token, so it waits again.
    await waitFor(() => app.services.deviceWaits.heldFor(device.id) > 0, 10_000, "the agent waiting again");
  });

  test("with long_poll off the agent holds no wait and learns of a lease only at its next poll", async () => {
    const device = await agentDevice(false);
    await openLease(device.id);
    await Bun.sleep(4_000);
    expect(app.services.deviceWaits.heldFor(device.id)).toBe(0);
    expect(tunnel.registry.get(device.id)).toBeUndefined();
  });
});
