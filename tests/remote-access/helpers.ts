import net from "node:net";
import tls from "node:tls";
import { TunnelClient } from "../../agent/tunnel-client";
import { issueTicket } from "../../modules/remote-access/tickets";
import { approvedDevice, heartbeatUrl, json, sampleHeartbeat } from "../devices/helpers";
import type { TestApp } from "../helpers/app";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the assertions themselves
export type Json = any;

/** A device web UI: answers `<name>` on /, streams /big, echoes WebSockets, and logs what it saw. */
export function startDeviceWeb(name: string, big?: { path: string }) {
  const seen: string[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request, srv) {
      const url = new URL(request.url);
      seen.push(`${request.method} ${url.pathname}`);
      if (url.pathname === "/ws" && srv.upgrade(request)) return undefined;
      if (url.pathname === "/big" && big) return new Response(Bun.file(big.path));
      return new Response(
        `<html><body><h1>device ${name}</h1><p>cookie:${request.headers.get("cookie") ?? ""}</p></body></html>`,
        {
          headers: { "content-type": "text/html" },
        },
      );
    },
    websocket: {
      message(ws, message) {
        ws.send(`echo:${message}`);
      },
    },
  });
  return { port: server.port!, seen, stop: () => server.stop(true) };
}

/** One HTTP/1.1 exchange on a raw socket (the vhost answers Connection: close); returns the raw response. */
export function rawRequest(port: number, request: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error("no complete response in time"));
    }, timeoutMs);
    socket.on("connect", () => socket.write(request));
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
  });
}

export function get(port: number, host: string, path = "/", headers: Record<string, string> = {}) {
  const lines = [
    `GET ${path} HTTP/1.1`,
    `Host: ${host}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return rawRequest(port, `${lines.join("\r\n")}\r\n\r\n`);
}

/** One HTTPS request to Caddy on 127.0.0.1:`port` with SNI `host` (certificate not verified: Caddy's internal CA). */
export function httpsRequest(
  port: number,
  host: string,
  pathname: string,
  headers: Record<string, string> = {},
) {
  return new Promise<{ raw: string; certificate: boolean }>((resolve) => {
    const socket = tls.connect({ host: "127.0.0.1", port, servername: host, rejectUnauthorized: false });
    const chunks: Buffer[] = [];
    let certificate = false;
    const timer = setTimeout(() => socket.destroy(), 15_000);
    socket.on("secureConnect", () => {
      certificate = socket.getPeerCertificate()?.subjectaltname?.includes(host) ?? false;
      const lines = [`GET ${pathname} HTTP/1.1`, `Host: ${host}`, "Connection: close"];
      for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    });
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ raw: Buffer.concat(chunks).toString("utf8"), certificate });
    });
  });
}

export function statusOf(raw: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
}

/** An approved, online device with an API lease; returns its heartbeat reply too. */
export async function deviceWithLease(app: TestApp, operatorToken: string) {
  const device = await approvedDevice(app);
  await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
  const opened = await app.fetch(`/api/v1/devices/${device.id}/remote_access`, {
    method: "POST",
    headers: { authorization: `Bearer ${operatorToken}`, "content-type": "application/json" },
    body: "{}",
  });
  const lease = ((await opened.json()) as Json).data as { lease_id: string; web_url: string };
  const beat = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
  const reply = ((await beat.json()) as Json).data as {
    remote_access_token: string;
    tunnel_host_key: string;
  };
  return { ...device, lease, reply, hex: device.id.replace(/-/g, "") };
}

export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 1000 && Date.now() < deadline; i++) {
    if (await check()) return;
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The agent's tunnel client, aimed at the test app's tunnel server and the given device targets. */
export function tunnelClient(app: TestApp, webTarget: string, sshTarget = "127.0.0.1:22") {
  return new TunnelClient(
    { server: `127.0.0.1:${app.running.tunnel!.sshPort}`, web_target: webTarget, ssh_target: sshTarget },
    app.url,
    { info() {}, warn() {} },
  );
}

/** Hands `client` the heartbeat reply's token and pinned key, and waits until its tunnel is up. */
export async function connectTunnel(
  client: TunnelClient,
  reply: { remote_access_token: string; tunnel_host_key: string },
) {
  await client.apply(reply.remote_access_token, reply.tunnel_host_key);
  await waitFor(() => client.status().state === "connected", 10_000, "tunnel connected");
}

/** A ticket for the device's lease, as "Open web UI" issues one (no operator: the test stands in). */
export function leaseTicket(app: TestApp, device: { id: string; lease: { lease_id: string } }) {
  return issueTicket(app.database.sql, {
    leaseId: device.lease.lease_id,
    deviceId: device.id,
    operatorId: null,
  });
}

/** Redeems a fresh ticket at the device's host on the vhost: the raw answer, the ticket and the cookie. */
export async function openWebUi(
  app: TestApp,
  device: { id: string; lease: { lease_id: string } },
  host: string,
) {
  const ticket = await leaseTicket(app, device);
  const raw = await get(app.running.tunnel!.httpPort, host, `/.outpost/auth?ticket=${ticket}`);
  return { raw, ticket, cookie: /set-cookie: ([^;\r\n]+)/i.exec(raw)?.[1] ?? "" };
}
