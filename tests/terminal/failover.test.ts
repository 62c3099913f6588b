// A terminal session through one of two tunnel processes (real agent, real sshd, web and tunnels as
// separate processes): the web process dials the multiplexer of the process holding the device. When
// that process is killed with SIGKILL the session ends with a clear message (its lease, and so the
// device's tunnel, end with it), and a new session opens at once through the other process.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { approveDevices } from "../../modules/devices/service";
import { freePort } from "../agent/helpers";
import { newMac } from "../devices/helpers";
import { createTestDatabase } from "../helpers/database";
import { startOutpostProcess } from "../helpers/process";
import { operatorSession } from "../helpers/sessions";
import { joinedSocket, startDevice, startTerminal, type TestDevice, waitFor } from "./helpers";

const database = await createTestDatabase();
// One DATA_DIR: both tunnel processes serve the host key the agent pins.
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-terminal-failover-"));
const SECRET_KEY = "terminal-failover-secret-key-0123456789abcdef";
const shared = {
  DATABASE_URL: database.url,
  SECRET_KEY,
  DATA_DIR: dataDir,
  BASE_DOMAIN: "failover-term.test",
};
const web = await startOutpostProcess({ ...shared, OUTPOST_ROLE: "web" });
const worker = await startOutpostProcess({ ...shared, OUTPOST_ROLE: "worker" });
async function tunnelProcess() {
  const ssh = await freePort();
  return {
    ssh,
    process: await startOutpostProcess({ ...shared, OUTPOST_ROLE: "tunnel", TUNNEL_SSH_PORT: String(ssh) }),
  };
}
const tunnels = [await tunnelProcess(), await tunnelProcess()];
const server = {
  url: web.url,
  fetch: (p: string, init?: RequestInit) => fetch(`${web.url}${p}`, { redirect: "manual", ...init }),
};
let device: TestDevice | undefined;

afterAll(async () => {
  await device?.stop();
  for (const p of [...tunnels.map((t) => t.process), worker, web])
    if (p.process.exitCode === null) await p.interrupt();
  rmSync(dataDir, { recursive: true, force: true });
});

async function register(mac: string) {
  const response = await fetch(`${web.url}/api/v1/devices/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ mac_address: mac, device_secret: `terminal-failover-secret-${mac}` }),
  });
  return ((await response.json()) as { data: { id: string; api_token?: string } }).data;
}

/** The instance holding the device's tunnel, from the registry. */
async function holder(deviceId: string): Promise<string | undefined> {
  const [row] = await database.sql<{ instance: string }[]>`
    select instance from tunnel_connections where device_id = ${deviceId}::uuid`;
  return row?.instance;
}

describe("terminal across two tunnel processes", () => {
  test("kill -9 of the holder: the session ends with a clear message; a new one opens on the other", async () => {
    const mac = newMac();
    const { id } = await register(mac);
    await approveDevices(database.sql, [id]);
    const { api_token: token } = await register(mac);
    device = await startDevice({
      url: web.url,
      tunnelSshPort: tunnels[0]!.ssh,
      tunnelServer: tunnels.map((t) => `127.0.0.1:${t.ssh}`).join(","),
      device: { id, token: token! },
    });
    await waitFor(
      async () =>
        (await database.sql`select 1 from devices where id = ${id} and last_seen_at is not null`).length > 0,
      20_000,
      "the agent's first heartbeat",
    );
    const session = await operatorSession(database.db, SECRET_KEY, "operator");
    const first = await startTerminal(server, id, session);
    expect(first.status).toBe(201);
    const socket = await joinedSocket(server, first.data, session.cookie);
    socket.send({ event: "input", payload: { data: "echo before-$((40+2))\r" } });
    await waitFor(() => /[\r\n]before-42\r\n/.test(socket.output()), 10_000, "the first echo");

    const held = (await holder(id))!;
    const instances = await database.sql<{ instance: string }[]>`select instance from tunnel_instances`;
    expect(instances.map((r) => r.instance)).toContain(held);
    // The instance name carries the pid: the holder is the process with that pid.
    const victim = tunnels.find((t) => held.includes(`:${t.process.process.pid}:`))!;
    const survivor = tunnels.find((t) => t !== victim)!;
    const killedAt = Date.now();
    victim.process.process.kill("SIGKILL");

    await waitFor(() => socket.frame("ended"), 10_000, "the session's end");
    expect(socket.output()).toContain("[Connection to the device lost.]");
    const second = await startTerminal(server, id, session);
    expect(second.status).toBe(201);
    const again = await joinedSocket(server, second.data, session.cookie);
    again.send({ event: "input", payload: { data: "echo after-$((40+3))\r" } });
    await waitFor(() => /[\r\n]after-43\r\n/.test(again.output()), 10_000, "the echo after failover");
    // The session's lease (and so the tunnel) went with it; the new one brought the tunnel up again,
    // on the survivor.
    expect(await holder(id)).toContain(`:${survivor.process.process.pid}:`);
    console.log(`terminal failover: a new session echoed ${Date.now() - killedAt} ms after the kill`);
    again.send({ event: "input", payload: { data: "exit\r" } });
    await waitFor(() => again.frame("ended"), 10_000, "the end");
    expect(again.output()).toContain("[Session ended with status: 0]");
  }, 150_000);
});
