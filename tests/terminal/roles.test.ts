// The WebSocket is held by a web process, the tunnel (and its multiplexer) by another, the jobs by a
// third: the terminal still reaches the device's sshd, because the web process dials the tunnel
// process's multiplexer (TUNNEL_MUX_HOST/PORT) like any client would.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { approveDevices } from "../../modules/devices/service";
import { createOperator, createSession } from "../../modules/operators/service";
import { csrfTokenFor, SESSION_COOKIE } from "../../modules/platform/access";
import { sha256Hex } from "../../modules/platform/crypto";
import { freePort } from "../agent/helpers";
import { newMac } from "../devices/helpers";
import { createTestDatabase } from "../helpers/database";
import { startOutpostProcess } from "../helpers/process";
import { openSocket, startDevice, startTerminal, type TestDevice, waitFor } from "./helpers";

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
    await waitFor(
      async () =>
        (await database.sql`select 1 from devices where id = ${id} and last_seen_at is not null`).length > 0,
      20_000,
      "the agent's first heartbeat",
    );
    const email = `roles-${crypto.randomUUID().slice(0, 8)}@example.test`;
    const operator = await createOperator(database.db, {
      email,
      password: "correct horse battery",
      role: "operator",
    });
    const sessionToken = await createSession(database.db, { operatorId: operator.id, ttlHours: 1 });
    const session = {
      cookie: `${SESSION_COOKIE}=${sessionToken}`,
      csrf: csrfTokenFor(SECRET_KEY, sha256Hex(sessionToken)),
    };
    const started = await startTerminal(server, id, session);
    expect(started.status).toBe(201);
    const socket = openSocket(server, started.data.socket_token, session.cookie);
    await socket.opened;
    socket.send({
      event: "join",
      topic: started.data.topic,
      payload: { session_ref: started.data.session_ref, command_id: started.data.command_id },
    });
    await waitFor(() => socket.frame("joined") ?? socket.frame("join_error"), 40_000, "the join");
    expect(socket.frame("join_error")).toBeUndefined();
    socket.send({ event: "input", payload: { data: "echo across-$((40+2))\r" } });
    await waitFor(() => /[\r\n]across-42\r\n/.test(socket.output()), 10_000, "the echo");
    socket.send({ event: "input", payload: { data: "exit\r" } });
    await waitFor(() => socket.frame("ended"), 10_000, "the end");
    expect(socket.output()).toContain("[Session ended with status: 0]");
  }, 120_000);
});
