// The WebSocket is held by a web process, the tunnel (and its multiplexer) by another, the jobs by a
// third: the terminal still reaches the device's sshd, because the web process dials the tunnel
// process's multiplexer (TUNNEL_MUX_HOST/PORT) like any client would.
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
import {
  firstHeartbeat,
  joinedSocket,
  startDevice,
  startTerminal,
  type TestDevice,
  waitFor,
} from "./helpers";

const database = await createTestDatabase();
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-terminal-roles-"));
const [sshPort, httpPort, muxPort] = [await freePort(), await freePort(), await freePort()];
const SECRET_KEY = "terminal-roles-secret-key-0123456789abcdef";
const shared = {
  DATABASE_URL: database.url,
  SECRET_KEY,
  DATA_DIR: dataDir,
  BASE_DOMAIN: "roles-term.test",
  TUNNEL_SSH_PORT: String(sshPort),
  TUNNEL_HTTP_PORT: String(httpPort),
  TUNNEL_MUX_PORT: String(muxPort),
};
const web = await startOutpostProcess({ ...shared, OUTPOST_ROLE: "web" });
const worker = await startOutpostProcess({ ...shared, OUTPOST_ROLE: "worker" });
const tunnelProcess = await startOutpostProcess({ ...shared, OUTPOST_ROLE: "tunnel" });
const server = {
  url: web.url,
  fetch: (p: string, init?: RequestInit) => fetch(`${web.url}${p}`, { redirect: "manual", ...init }),
};
let device: TestDevice | undefined;

afterAll(async () => {
  await device?.stop();
  for (const p of [tunnelProcess, worker, web]) await p.interrupt();
  rmSync(dataDir, { recursive: true, force: true });
});

async function register(mac: string) {
  const response = await fetch(`${web.url}/api/v1/devices/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    // The device's secret, as the agent sends it: an approved device's token needs it.
    body: JSON.stringify({ mac_address: mac, device_secret: `terminal-roles-secret-${mac}` }),
  });
  return ((await response.json()) as { data: { id: string; api_token?: string } }).data;
}

describe("terminal with web and tunnel in separate processes", () => {
  test("the web process's socket reaches sshd through the tunnel process's multiplexer", async () => {
    expect(tunnelProcess.output()).toContain("tunnel role listening");
    const mac = newMac();
    const { id } = await register(mac);
    await approveDevices(database.sql, [id]);
    const { api_token: token } = await register(mac);
    device = await startDevice({ url: web.url, tunnelSshPort: sshPort, device: { id, token: token! } });
    await firstHeartbeat(database.sql, id);
    const session = await operatorSession(database.db, SECRET_KEY, "operator");
    const started = await startTerminal(server, id, session);
    expect(started.status).toBe(201);
    const socket = await joinedSocket(server, started.data, session.cookie);
    socket.send({ event: "input", payload: { data: "echo across-$((40+2))\r" } });
    await waitFor(() => /[\r\n]across-42\r\n/.test(socket.output()), 10_000, "the echo");
    socket.send({ event: "input", payload: { data: "exit\r" } });
    await waitFor(() => socket.frame("ended"), 10_000, "the end");
    expect(socket.output()).toContain("[Session ended with status: 0]");
  }, 120_000);
});
