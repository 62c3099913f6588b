import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "ssh2";
import type { TunnelClient } from "../../agent/tunnel-client";
import { signCredential } from "../../modules/remote-access/token";
import { startTestApp } from "../helpers/app";
import {
  connectTunnel,
  deviceWithLease,
  get,
  leaseTicket,
  openWebUi,
  rawRequest,
  startDeviceWeb,
  statusOf,
  tunnelClient,
  waitFor,
} from "./helpers";

const DOMAIN = "remote.test";
const app = await startTestApp({ BASE_DOMAIN: DOMAIN });
const tunnel = app.running.tunnel!;
const operator = await app.token("operator");
const BIG = path.join(tmpdir(), `outpost-big-${process.pid}.bin`);
const BIG_MB = 64;
{
  const block = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < block.length; i += 4) block.writeUInt32LE((i * 2654435761) >>> 0, i);
  const parts = Array.from({ length: BIG_MB }, (_, n) => Buffer.from(block.map((b) => (b + n) & 0xff)));
  writeFileSync(BIG, Buffer.concat(parts));
}
const bigHash = createHash("sha256")
  .update(await Bun.file(BIG).bytes())
  .digest("hex");

const webA = startDeviceWeb("A", { path: BIG });
const webB = startDeviceWeb("B");
const echo = net.createServer((s) => s.pipe(s)).listen(0, "127.0.0.1");
const echoPort = await new Promise<number>((r) =>
  echo.on("listening", () => r((echo.address() as net.AddressInfo).port)),
);
const clients: TunnelClient[] = [];
afterAll(async () => {
  for (const c of clients) await c.stop();
  webA.stop();
  webB.stop();
  echo.close();
  rmSync(BIG, { force: true });
});

function agentFor(webPort: number) {
  const client = tunnelClient(app, `http://127.0.0.1:${webPort}`, `127.0.0.1:${echoPort}`);
  clients.push(client);
  return client;
}

async function connected(webPort: number) {
  const device = await deviceWithLease(app, operator);
  const client = agentFor(webPort);
  await connectTunnel(client, device.reply);
  return { device, client, host: `dev-${device.hex}.${DOMAIN}` };
}

async function cookieFor(device: { id: string; lease: { lease_id: string } }, host: string) {
  const { raw, ticket, cookie } = await openWebUi(app, device, host);
  expect(statusOf(raw)).toBe(302);
  expect(raw).toMatch(/set-cookie: [^\r\n]*HttpOnly/i);
  expect(raw).not.toMatch(/set-cookie: [^\r\n]*Domain=/i);
  return { setCookie: cookie, ticket };
}

/** Opens an SSH connection to the tunnel server; resolves "ready" or the error message. */
function trySsh(username: string, password: string): Promise<{ result: string; client: Client }> {
  return new Promise((resolve) => {
    const client = new Client();
    client.on("ready", () => resolve({ result: "ready", client }));
    client.on("error", (e) => resolve({ result: e.message, client }));
    client.connect({ host: "127.0.0.1", port: tunnel.sshPort, username, password, readyTimeout: 5000 });
  });
}

describe("tunnel: agent client, SSH server, vhost front, multiplexer", () => {
  test("an agent with a lease connects; the state is in PostgreSQL; the device page arrives through the vhost only with the ticket's cookie", async () => {
    const { device, host } = await connected(webA.port);
    // The state row is written as the forwards are granted (asynchronously to the agent's view).
    const forwards = async () =>
      (
        await app.database.sql<{ forwards: string[] }[]>`
          select forwards from tunnel_connections where device_id = ${device.id}`
      )[0]?.forwards.sort() ?? [];
    await waitFor(async () => (await forwards()).length === 2, 5000, "tunnel state in PostgreSQL");
    expect(await forwards()).toEqual(["http", "ssh"]);

    const before = webA.seen.length;
    const refused = await get(tunnel.httpPort, host);
    expect(statusOf(refused)).toBe(403);
    expect(
      statusOf(await get(tunnel.httpPort, host, "/", { cookie: "outpost_remote_access=forged.abc" })),
    ).toBe(403);
    expect(webA.seen.length).toBe(before); // the device saw nothing
    expect(statusOf(await get(tunnel.httpPort, `dev-${"0".repeat(32)}.${DOMAIN}`))).toBe(404);
    expect(statusOf(await get(tunnel.httpPort, "example.com"))).toBe(404);

    const { setCookie, ticket } = await cookieFor(device, host);
    const again = await get(tunnel.httpPort, host, `/.outpost/auth?ticket=${ticket}`);
    expect(statusOf(again)).toBe(403); // one-time
    const page = await get(tunnel.httpPort, host, "/", { cookie: `${setCookie}; other=1` });
    expect(statusOf(page)).toBe(200);
    expect(page).toContain("device A");
    expect(page).toMatch(/connection: close/i);
    expect(page).toContain("cookie:other=1"); // our access cookie is not passed to the device
  });

  test("a cookie of device A does not open device B; a ticket for A does not work on B's host", async () => {
    const a = await connected(webA.port);
    const b = await connected(webB.port);
    const { setCookie } = await cookieFor(a.device, a.host);
    const before = webB.seen.length;
    expect(statusOf(await get(tunnel.httpPort, b.host, "/", { cookie: setCookie }))).toBe(403);
    const ticket = await leaseTicket(app, a.device);
    expect(statusOf(await get(tunnel.httpPort, b.host, `/.outpost/auth?ticket=${ticket}`))).toBe(403);
    expect(webB.seen.length).toBe(before);
  });

  test("a valid cookie but no agent connected: 502 page saying so", async () => {
    const device = await deviceWithLease(app, operator);
    const host = `dev-${device.hex}.${DOMAIN}`;
    const { setCookie } = await cookieFor(device, host);
    const response = await get(tunnel.httpPort, host, "/", { cookie: setCookie });
    expect(statusOf(response)).toBe(502);
    expect(response).toContain("Device not connected");
  });

  test("requests for A then B pipelined on ONE connection never reach the wrong device", async () => {
    const a = await connected(webA.port);
    const b = await connected(webB.port);
    const ca = (await cookieFor(a.device, a.host)).setCookie;
    const cb = (await cookieFor(b.device, b.host)).setCookie;
    const bBefore = webB.seen.length;
    const raw = await rawRequest(
      tunnel.httpPort,
      `GET / HTTP/1.1\r\nHost: ${a.host}\r\nCookie: ${ca}\r\n\r\nGET / HTTP/1.1\r\nHost: ${b.host}\r\nCookie: ${cb}\r\n\r\n`,
    );
    expect(raw).toContain("device A");
    expect(raw).not.toContain("device B");
    expect(webB.seen.length).toBe(bBefore);
    // Alternating on fresh connections, each reaches its own device.
    for (let i = 0; i < 6; i++) {
      const [host, cookie, name] = i % 2 ? [b.host, cb, "B"] : [a.host, ca, "A"];
      const response = await get(tunnel.httpPort, host, "/", { cookie });
      expect(response).toContain(`device ${name}`);
    }
  });

  test("WebSocket round trip through the vhost", async () => {
    const a = await connected(webA.port);
    const { setCookie } = await cookieFor(a.device, a.host);
    const socket = net.connect(tunnel.httpPort, "127.0.0.1");
    await new Promise((r) => socket.on("connect", r));
    socket.write(
      `GET /ws HTTP/1.1\r\nHost: ${a.host}\r\nCookie: ${setCookie}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    );
    let received = Buffer.alloc(0);
    socket.on("data", (c: Buffer) => {
      received = Buffer.concat([received, c]);
    });
    await waitFor(() => received.includes("\r\n\r\n"), 5000, "upgrade response");
    expect(received.toString("latin1")).toMatch(/^HTTP\/1\.1 101/);
    received = Buffer.alloc(0);
    // A masked text frame "hi".
    const mask = Buffer.from([1, 2, 3, 4]);
    const payload = Buffer.from("hi").map((b, i) => b ^ mask[i % 4]!);
    socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | 2]), mask, payload]));
    await waitFor(() => received.includes("echo:hi"), 5000, "echo frame");
    socket.destroy();
  });

  test(`a ${BIG_MB} MB download arrives complete (same SHA-256) through a slow reader`, async () => {
    const a = await connected(webA.port);
    const { setCookie } = await cookieFor(a.device, a.host);
    const socket = net.connect(tunnel.httpPort, "127.0.0.1");
    const hash = createHash("sha256");
    let headDone = false;
    let pending = Buffer.alloc(0);
    let bodyBytes = 0;
    let reads = 0;
    const done = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.on("connect", () =>
      socket.write(`GET /big HTTP/1.1\r\nHost: ${a.host}\r\nCookie: ${setCookie}\r\n\r\n`),
    );
    socket.on("data", (chunk: Buffer) => {
      if (!headDone) {
        pending = Buffer.concat([pending, chunk]);
        const end = pending.indexOf("\r\n\r\n");
        if (end < 0) return;
        headDone = true;
        chunk = pending.subarray(end + 4);
      }
      hash.update(chunk);
      bodyBytes += chunk.length;
      // Slow reader for the first part: pause now and then, so the SSH window fills.
      if (++reads % 50 === 0 && bodyBytes < 8 * 1024 * 1024) {
        socket.pause();
        setTimeout(() => socket.resume(), 100);
      }
    });
    await done;
    expect(bodyBytes).toBe(BIG_MB * 1024 * 1024);
    expect(hash.digest("hex")).toBe(bigHash);
  });

  test("multiplexer: CONNECT without or with a wrong credential → 407; with one, a stream to the device's ssh target", async () => {
    const a = await connected(webA.port);
    const target = `${a.host}:22`;
    const connect = (auth?: string) =>
      rawRequest(
        tunnel.muxPort,
        `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ""}\r\n`,
      );
    expect(statusOf(await connect())).toBe(407);
    const otherDevice = signCredential(app.config.secretKey, "mux", {
      d: crypto.randomUUID(),
      exp: Date.now() / 1000 + 60,
    });
    expect(statusOf(await connect(`Bearer ${otherDevice}`))).toBe(407);
    const cookieKind = signCredential(app.config.secretKey, "cookie", {
      d: a.device.id,
      exp: Date.now() / 1000 + 60,
    });
    expect(statusOf(await connect(`Bearer ${cookieKind}`))).toBe(407);

    const good = signCredential(app.config.secretKey, "mux", {
      d: a.device.id,
      exp: Math.floor(Date.now() / 1000) + 60,
    });
    const socket = net.connect(tunnel.muxPort, "127.0.0.1");
    let received = "";
    socket.on("data", (c: Buffer) => {
      received += c.toString();
    });
    await new Promise((r) => socket.on("connect", r));
    socket.write(
      `CONNECT ${target} HTTP/1.1\r\nProxy-Authorization: Bearer ${good}\r\n\r\nSSH-2.0-probe\r\n`,
    );
    await waitFor(() => received.includes("SSH-2.0-probe"), 5000, "echo through the multiplexer");
    expect(received).toMatch(/^HTTP\/1\.1 200/);
    socket.destroy();
  });
});

describe("https web target", () => {
  test("a device UI on https with a self-signed certificate (like Cockpit on 9090) works through the tunnel", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "outpost-selfsigned-"));
    const key = path.join(dir, "key.pem");
    const cert = path.join(dir, "cert.pem");
    const made = Bun.spawnSync(
      [
        "/usr/bin/openssl",
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        key,
        "-out",
        cert,
        "-days",
        "1",
        "-subj",
        "/CN=device.local",
      ],
      { stdout: "ignore", stderr: "ignore" },
    );
    expect(made.exitCode).toBe(0);
    const secure = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      tls: { key: Bun.file(key), cert: Bun.file(cert) },
      fetch: () => new Response("<h1>cockpit-like</h1>"),
    });
    try {
      const device = await deviceWithLease(app, operator);
      const client = tunnelClient(app, `https://127.0.0.1:${secure.port}`);
      clients.push(client);
      await connectTunnel(client, device.reply);
      const host = `dev-${device.hex}.${DOMAIN}`;
      const { setCookie } = await cookieFor(device, host);
      const page = await get(tunnel.httpPort, host, "/", { cookie: setCookie });
      expect(statusOf(page)).toBe(200);
      expect(page).toContain("cockpit-like");
    } finally {
      secure.stop(true);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("tunnel security", () => {
  test("device A's token cannot log in as B; forged, expired and lease-ended tokens are refused", async () => {
    const a = await deviceWithLease(app, operator);
    const b = await deviceWithLease(app, operator);
    const attempts: [string, string][] = [
      [`dev-${b.hex}`, a.reply.remote_access_token],
      [`dev-${a.hex}`, `${a.reply.remote_access_token.split(".")[0]}.${"0".repeat(64)}`],
      [
        `dev-${a.hex}`,
        signCredential(app.config.secretKey, "tunnel", { d: a.id, exp: Math.floor(Date.now() / 1000) - 1 }),
      ],
      [
        `dev-${a.hex}`,
        signCredential(app.config.secretKey, "cookie", { d: a.id, exp: Math.floor(Date.now() / 1000) + 60 }),
      ],
      [`root`, a.reply.remote_access_token],
    ];
    for (const [user, password] of attempts) {
      const { result, client } = await trySsh(user, password);
      client.end();
      expect({ user, result }).toEqual({ user, result: "All configured authentication methods failed" });
    }
    // Lease ended → the same (still unexpired) token is refused.
    await app.fetch(`/api/v1/devices/${a.id}/remote_access/${a.lease.lease_id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${operator}` },
    });
    const ended = await trySsh(`dev-${a.hex}`, a.reply.remote_access_token);
    ended.client.end();
    expect(ended.result).toBe("All configured authentication methods failed");
  });

  test("an authenticated device gets only its http/ssh forwards: other names, sessions, exec and local forwards are refused", async () => {
    const a = await deviceWithLease(app, operator);
    const { result, client } = await trySsh(`dev-${a.hex}`, a.reply.remote_access_token);
    expect(result).toBe("ready");
    const forward = (name: string) =>
      new Promise<string>((r) => client.forwardIn(name, 0, (e) => r(e ? "refused" : "ok")));
    expect(await forward("mysql")).toBe("refused");
    expect(await forward("http")).toBe("ok");
    expect(await forward("http")).toBe("refused"); // once
    expect(await new Promise<string>((r) => client.exec("id", (e) => r(e ? "refused" : "ok")))).toBe(
      "refused",
    );
    expect(await new Promise<string>((r) => client.shell((e) => r(e ? "refused" : "ok")))).toBe("refused");
    expect(
      await new Promise<string>((r) =>
        client.forwardOut("127.0.0.1", 0, "127.0.0.1", app.running.port!, (e) => r(e ? "refused" : "ok")),
      ),
    ).toBe("refused");
    client.end();
  });

  test("ending the lease drops the tunnel within 5 s; the agent reports it; the vhost then answers 403", async () => {
    const { device, client, host } = await connected(webA.port);
    const { setCookie } = await cookieFor(device, host);
    expect(statusOf(await get(tunnel.httpPort, host, "/", { cookie: setCookie }))).toBe(200);
    const started = Date.now();
    await app.fetch(`/api/v1/devices/${device.id}/remote_access/${device.lease.lease_id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${operator}` },
    });
    await waitFor(() => tunnel.registry.get(device.id) === undefined, 5000, "tunnel dropped");
    await waitFor(() => client.status().state !== "connected", 5000, "agent sees the tunnel down");
    expect(Date.now() - started).toBeLessThan(5000);
    await client.apply(undefined); // the next heartbeat has no token: the client stops retrying
    expect(client.status()).toEqual({ state: "disconnected", active: false });
    // The cookie's lease check is cached for at most 2 s per tunnel process.
    let status = 0;
    await waitFor(
      async () => {
        status = statusOf(await get(tunnel.httpPort, host, "/", { cookie: setCookie }));
        return status === 403;
      },
      3000,
      "403",
    );
    expect(status).toBe(403);
  });

  test("the client refuses a server whose host key differs from the pinned fingerprint", async () => {
    const device = await deviceWithLease(app, operator);
    const client = agentFor(webA.port);
    await client.apply(device.reply.remote_access_token, `SHA256:${"A".repeat(43)}`);
    await waitFor(() => (client.status().error ?? "").includes("host key"), 5000, "host key refusal");
    expect(tunnel.registry.get(device.id)).toBeUndefined();
    await client.stop();
  });
});
