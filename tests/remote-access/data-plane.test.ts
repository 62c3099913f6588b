// The tunnel's data plane (agent/tunnel-work.ts): the agent's TLS work connections carry the streams,
// SSH channels whatever finds none idle; both ends prove the token's key, bound to their TLS session.
import { afterAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import net from "node:net";
import tls from "node:tls";
import type { TunnelClient } from "../../agent/tunnel-client";
import { WORK_POOL_SIZE, WorkPool } from "../../agent/tunnel-work";
import { signCredential } from "../../modules/remote-access/token";
import { selfSignedCertificate } from "../../modules/remote-access/tunnel/certificate";
import { readLine, WORK_GREETING, workProof } from "../../shared/tunnel-work";
import { startTestApp } from "../helpers/app";
import {
  connectTunnel,
  deviceWithLease,
  get,
  openWebUi,
  startDeviceWeb,
  statusOf,
  tunnelClient,
  waitFor,
} from "./helpers";

const DOMAIN = "remote.test";
const app = await startTestApp({ BASE_DOMAIN: DOMAIN });
const tunnel = app.running.tunnel!;
const operator = await app.token("operator");
const web = startDeviceWeb("A");
const clients: TunnelClient[] = [];
const sockets: net.Socket[] = [];
afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const c of clients) await c.stop();
  web.stop();
});

/** A device with a lease whose agent tunnel is up, and its access cookie. */
async function tunnelled(webTarget = `http://127.0.0.1:${web.port}`) {
  const device = await deviceWithLease(app, operator);
  const client = tunnelClient(app, webTarget);
  clients.push(client);
  await connectTunnel(client, device.reply);
  const host = `dev-${device.hex}.${DOMAIN}`;
  const { cookie } = await openWebUi(app, device, host);
  const work = () => tunnel.registry.get(device.id)!.work;
  await waitFor(() => work().idleCount === WORK_POOL_SIZE, 5000, "the agent's idle work connections");
  return { device, client, host, cookie, work };
}

/** A WebSocket through the vhost, held open; resolves once upgraded. */
async function webSocket(host: string, cookie: string) {
  const socket = net.connect(tunnel.httpPort, "127.0.0.1");
  sockets.push(socket);
  await new Promise((r) => socket.on("connect", r));
  let received = "";
  socket.on("data", (c: Buffer) => {
    received += c.toString("latin1");
  });
  socket.write(
    `GET /ws HTTP/1.1\r\nHost: ${host}\r\nCookie: ${cookie}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
  );
  await waitFor(() => received.startsWith("HTTP/1.1 101"), 5000, "the upgrade");
  return socket;
}

/** One handshake on the data port; resolves the server's answer line, or "closed". */
function handshake(
  line: (socket: tls.TLSSocket) => string,
): Promise<{ answer: string; socket: tls.TLSSocket }> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: "127.0.0.1", port: tunnel.dataPort, rejectUnauthorized: false });
    socket.on("error", () => {});
    socket.once("secureConnect", () => {
      socket.write(line(socket));
      readLine(socket, 5000).then(
        (answer) => resolve({ answer, socket }),
        () => resolve({ answer: "closed", socket }),
      );
    });
  });
}

const parts = (token: string) => token.split(".") as [string, string];

describe("tunnel data plane", () => {
  test("streams ride the agent's idle work connections, which it replaces; with none idle, an SSH channel serves", async () => {
    const a = await tunnelled();
    const held = await webSocket(a.host, a.cookie);
    // One connection carries the WebSocket; the agent opened another so that four wait again.
    await waitFor(() => a.work().size === WORK_POOL_SIZE + 1, 5000, "a replacement");
    expect(a.work().idleCount).toBe(WORK_POOL_SIZE);
    const page = await get(tunnel.httpPort, a.host, "/", { cookie: a.cookie });
    expect(statusOf(page)).toBe(200);
    expect(page).toContain("device A");

    // Every idle connection taken (held, so the agent sees no reason to open more): the SSH channel.
    const taken = Array.from({ length: WORK_POOL_SIZE }, () => a.work().take());
    expect(a.work().idleCount).toBe(0);
    const viaChannel = await get(tunnel.httpPort, a.host, "/", { cookie: a.cookie });
    expect(statusOf(viaChannel)).toBe(200);
    expect(viaChannel).toContain("device A");
    for (const socket of taken) socket?.destroy();
    await waitFor(() => a.work().idleCount === WORK_POOL_SIZE, 5000, "the pool refilled");
    held.destroy();
  });

  test("the data port adopts only a connection proven with the current token of a device tunnelled here", async () => {
    const a = await tunnelled();
    const other = await deviceWithLease(app, operator); // a lease, but no tunnel in this process
    const [body, key] = parts(a.device.reply.remote_access_token);
    const expired = parts(
      signCredential(app.config.secretKey, "tunnel", {
        d: a.device.id,
        exp: Math.floor(Date.now() / 1000) - 1,
      }),
    );
    const [otherBody, otherKey] = parts(other.reply.remote_access_token);
    const greet = (b: string, proof: string) => `${WORK_GREETING} ${b} ${proof}\n`;
    // The proof of another TLS session: what a man in the middle could forward.
    const elsewhere = await new Promise<tls.TLSSocket>((resolve) => {
      const socket = tls.connect({ host: "127.0.0.1", port: tunnel.dataPort, rejectUnauthorized: false });
      socket.once("secureConnect", () => resolve(socket));
    });
    const replayed = workProof(key, "agent", elsewhere);
    elsewhere.destroy();
    const recorded = await handshake((s) => greet(body, workProof(key, "agent", s)));
    const refused = {
      "a wrong key": await handshake((s) => greet(body, workProof("0".repeat(64), "agent", s))),
      "a device without a tunnel here": await handshake((s) =>
        greet(otherBody, workProof(otherKey, "agent", s)),
      ),
      "an expired token": await handshake((s) => greet(expired[0], workProof(expired[1], "agent", s))),
      "a proof replayed from another session": await handshake(() => greet(body, replayed)),
      "the server's own proof": await handshake((s) => greet(body, workProof(key, "server", s))),
      "not a greeting": await handshake(() => "GET / HTTP/1.1\n"),
      "no proof": await handshake(() => `${WORK_GREETING} ${body}\n`),
      "a field too many": await handshake((s) => `${greet(body, workProof(key, "agent", s)).trimEnd()} x\n`),
    };
    for (const [what, { answer, socket }] of Object.entries(refused)) {
      expect({ what, answer }).toEqual({ what, answer: "closed" });
      socket.destroy();
    }
    // The accepted one: the server proves the same key, bound to this session, and adopts it.
    expect(recorded.answer).toBe(`OK ${workProof(key, "server", recorded.socket)}`);
    expect(a.work().idleCount).toBe(WORK_POOL_SIZE + 1);
    recorded.socket.destroy();
  });

  test("the server's side: an agent's refusal falls back to an SSH channel, its silence is a 504, at most 8 idle per device", async () => {
    const a = await tunnelled();
    const [body, key] = parts(a.device.reply.remote_access_token);
    const held = Array.from({ length: WORK_POOL_SIZE }, () => a.work().take()); // the agent's, out of the way
    const adopt = async () => {
      const { answer, socket } = await handshake(
        (s) => `${WORK_GREETING} ${body} ${workProof(key, "agent", s)}\n`,
      );
      expect(answer).toStartWith("OK ");
      return socket;
    };
    const nextLine = (socket: tls.TLSSocket) => readLine(socket, 5000);

    const refusing = await adopt();
    const asked = nextLine(refusing).then((line) => {
      refusing.write("NO\n");
      return line;
    });
    const page = await get(tunnel.httpPort, a.host, "/", { cookie: a.cookie });
    expect(await asked).toBe("OPEN http");
    expect(statusOf(page)).toBe(200); // over an SSH channel
    expect(page).toContain("device A");

    const silent = await adopt();
    const started = Date.now();
    const frozen = await get(tunnel.httpPort, a.host, "/", { cookie: a.cookie });
    expect(statusOf(frozen)).toBe(504);
    expect(Date.now() - started).toBeLessThan(5000);
    silent.resume(); // read on to the end: the server hung up on the device that did not answer
    await waitFor(() => silent.destroyed, 5000, "the silent connection closed");

    const adopted = [];
    for (let i = 0; i < 8; i++) adopted.push(await adopt());
    expect(a.work().idleCount).toBe(8);
    const ninth = await handshake((s) => `${WORK_GREETING} ${body} ${workProof(key, "agent", s)}\n`);
    expect(ninth.answer).toBe("closed");
    // An idle connection the agent hangs up on is noticed (not kept, taking a place), and one that
    // sends anything while idle is dropped.
    adopted.shift()!.end();
    await waitFor(() => a.work().idleCount === 7, 5000, "the hung-up connection gone");
    adopted.shift()!.write("unexpected\n");
    await waitFor(() => a.work().idleCount === 6, 5000, "the chatty connection gone");
    adopted.push(await adopt());
    expect(a.work().idleCount).toBe(7);
    for (const socket of [...adopted, ninth.socket, refusing]) socket.destroy();
    for (const socket of held) socket?.destroy();
  });

  test("the agent refuses a data server that cannot prove the key: the device's web UI sees nothing", async () => {
    const a = await deviceWithLease(app, operator);
    const impostor = tls.createServer(selfSignedCertificate("impostor"), (socket) => {
      socket.on("error", () => {});
      socket.write(`OK ${"0".repeat(64)}\nOPEN http\n`);
    });
    await new Promise<void>((r) => impostor.listen(0, "127.0.0.1", () => r()));
    const warnings: unknown[] = [];
    let opened = 0;
    const pool = new WorkPool({
      host: "127.0.0.1",
      port: (impostor.address() as net.AddressInfo).port,
      token: () => a.reply.remote_access_token,
      openTarget: () => {
        opened++;
        return net.connect(web.port, "127.0.0.1");
      },
      logger: { warn: (obj) => warnings.push(obj) },
    });
    pool.start();
    await waitFor(() => warnings.length > 0, 5000, "a refusal");
    await Bun.sleep(300);
    pool.stop();
    impostor.close();
    expect(opened).toBe(0);
    expect(pool.idleCount).toBe(0);
    expect(JSON.stringify(warnings[0])).toContain("did not prove");
  });

  test("a device whose web UI is down: 502 saying so, over a work connection and over an SSH channel", async () => {
    const { host, cookie, work } = await tunnelled("http://127.0.0.1:1"); // nothing listens there
    const viaWork = await get(tunnel.httpPort, host, "/", { cookie });
    expect(statusOf(viaWork)).toBe(502);
    expect(viaWork).toContain("closed the connection without an answer");
    const held = Array.from({ length: WORK_POOL_SIZE }, () => work().take());
    const viaChannel = await get(tunnel.httpPort, host, "/", { cookie });
    expect(statusOf(viaChannel)).toBe(502);
    for (const socket of held) socket?.destroy();
  });

  test("the wire protocol spelled out: a handshake written from the protocol's text is adopted", async () => {
    // Agents and servers of different versions meet here: the greeting and the exporter label are
    // written literally, not taken from the code under test.
    const a = await tunnelled();
    const [body, key] = parts(a.device.reply.remote_access_token);
    const proof = (role: string, socket: tls.TLSSocket) =>
      createHmac("sha256", key)
        .update(
          `${role}:${socket.exportKeyingMaterial(32, "EXPORTER-outpost-tunnel-work", Buffer.alloc(0)).toString("hex")}`,
        )
        .digest("hex");
    const { answer, socket } = await handshake((s) => `OUTPOST-WORK/1 ${body} ${proof("agent", s)}\n`);
    expect(answer).toBe(`OK ${proof("server", socket)}`);
    expect(a.work().idleCount).toBe(WORK_POOL_SIZE + 1);
    socket.destroy();
  });

  test("a lease's end closes the device's work connections, idle and carrying, within 5 s", async () => {
    const a = await tunnelled();
    const held = await webSocket(a.host, a.cookie);
    const work = a.work();
    const closed = new Promise((r) => held.on("close", r));
    // One adopted connection that no agent would close by itself: the server must.
    const [body, key] = parts(a.device.reply.remote_access_token);
    const { answer, socket: stray } = await handshake(
      (s) => `${WORK_GREETING} ${body} ${workProof(key, "agent", s)}\n`,
    );
    expect(answer).toStartWith("OK ");
    const strayClosed = new Promise((r) => stray.on("close", r));
    const started = Date.now();
    await app.fetch(`/api/v1/devices/${a.device.id}/remote_access/${a.device.lease.lease_id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${operator}` },
    });
    await closed;
    let strayOpen = true;
    void strayClosed.then(() => {
      strayOpen = false;
    });
    await waitFor(() => !strayOpen, 5000, "the server closing the adopted stray connection");
    await waitFor(() => work.size === 0, 5000, "no work connection left");
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
