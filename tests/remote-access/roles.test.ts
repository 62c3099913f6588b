// Scale-out: web, worker and tunnel as three real processes on one PostgreSQL. A lease opened through the
// web process brings an agent's tunnel up in the tunnel process; its state is visible through PostgreSQL;
// the device page arrives through the tunnel process's vhost; ending the lease via web drops the tunnel.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { TunnelClient } from "../../agent/tunnel-client";
import { approveDevices } from "../../modules/devices/service";
import { createApiToken } from "../../modules/operators/service";
import { issueTicket } from "../../modules/remote-access/tickets";
import { freePort } from "../agent/helpers";
import { createTestDatabase } from "../helpers/database";
import { startOutpostProcess } from "../helpers/process";
import { get, type Json, startDeviceWeb, statusOf, waitFor } from "./helpers";

const database = await createTestDatabase();
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-roles-"));
const [sshPort, httpPort] = [await freePort(), await freePort()];
const shared = {
  DATABASE_URL: database.url,
  SECRET_KEY: "roles-test-secret-key-0123456789abcdef",
  // One DATA_DIR on one machine: the web processes read the tunnel host key's fingerprint from it.
  DATA_DIR: dataDir,
  BASE_DOMAIN: "remote.test",
  TUNNEL_SSH_PORT: String(sshPort),
  TUNNEL_HTTP_PORT: String(httpPort),
};
const web = await startOutpostProcess({ ...shared, OUTPOST_ROLE: "web" });
const worker = await startOutpostProcess({ ...shared, OUTPOST_ROLE: "worker" });
const tunnelProcess = await startOutpostProcess({ ...shared, OUTPOST_ROLE: "tunnel" });
const deviceWeb = startDeviceWeb("scaled");
const client = new TunnelClient(
  {
    server: `127.0.0.1:${sshPort}`,
    web_target: `http://127.0.0.1:${deviceWeb.port}`,
    ssh_target: "127.0.0.1:22",
  },
  web.url,
  { info() {}, warn() {} },
);
afterAll(async () => {
  await client.stop();
  deviceWeb.stop();
  for (const p of [tunnelProcess, worker, web]) await p.interrupt();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The device's secret, as the agent sends it: an approved device's token needs it. */
const DEVICE_SECRET = "remote-access-roles-device-secret-0001";

describe("web, worker and tunnel as separate processes", () => {
  test("lease via web → tunnel in the tunnel process → page through its vhost → lease end drops it", async () => {
    expect(tunnelProcess.output()).toContain("tunnel role listening");
    expect(worker.output()).toContain("job runner started");
    const register = await fetch(`${web.url}/api/v1/devices/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mac_address: "02:AA:BB:CC:DD:01", device_secret: DEVICE_SECRET }),
    });
    const id = ((await register.json()) as Json).data.id as string;
    await approveDevices(database.sql, [id]);
    const again = await fetch(`${web.url}/api/v1/devices/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mac_address: "02:AA:BB:CC:DD:01", device_secret: DEVICE_SECRET }),
    });
    const deviceToken = ((await again.json()) as Json).data.api_token as string;
    const beat = () =>
      fetch(`${web.url}/api/v1/devices/${id}/heartbeat?api_key=${deviceToken}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ telemetry: {} }),
      });
    expect((await beat()).status).toBe(200);
    const operator = (await createApiToken(database.db, { name: "roles", role: "operator" })).token;
    const opened = await fetch(`${web.url}/api/v1/devices/${id}/remote_access`, {
      method: "POST",
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(opened.status).toBe(201);
    const lease = ((await opened.json()) as Json).data;
    const reply = ((await (await beat()).json()) as Json).data;
    await client.apply(reply.remote_access_token, reply.tunnel_host_key);
    await waitFor(() => client.status().state === "connected", 10_000, "tunnel connected");
    await waitFor(
      async () => (await database.sql`select 1 from tunnel_connections where device_id = ${id}`).length === 1,
      5000,
      "tunnel state in PostgreSQL",
    );

    const host = `dev-${id.replace(/-/g, "")}.remote.test`;
    const ticket = await issueTicket(database.sql, {
      leaseId: lease.lease_id,
      deviceId: id,
      operatorId: null,
    });
    const auth = await get(httpPort, host, `/.outpost/auth?ticket=${ticket}`);
    const cookie = /set-cookie: ([^;\r\n]+)/i.exec(auth)![1]!;
    const page = await get(httpPort, host, "/", { cookie });
    expect(statusOf(page)).toBe(200);
    expect(page).toContain("device scaled");

    const ended = await fetch(`${web.url}/api/v1/devices/${id}/remote_access/${lease.lease_id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${operator}` },
    });
    expect(ended.status).toBe(204);
    await waitFor(() => client.status().state !== "connected", 5000, "tunnel dropped by the tunnel process");
    await waitFor(
      async () => (await database.sql`select 1 from tunnel_connections where device_id = ${id}`).length === 0,
      5000,
      "tunnel state cleared",
    );
  });
});
