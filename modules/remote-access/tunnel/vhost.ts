import net, { type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Sql } from "postgres";
import type { Logger } from "../../platform/logger";
import { domainAllowed } from "../domains";
import { deviceHost, deviceIdFromHost } from "../hosts";
import { ACCESS_COOKIE, type CookieChecker, redeemTicket } from "../tickets";
import { confineResponseHead } from "./device-cookies";
import { FORWARDED_HEADER, forwardMark, forwardToHolder } from "./front-forward";
import { header, page, type RequestHead, readRequestHead, respond, serializeHead } from "./http-head";
import { holderOf } from "./instances";
import type { TunnelRegistry } from "./registry";
import { ChannelTimeout, openForward } from "./stream";

export interface VhostOptions {
  sql: Sql;
  secretKey: string;
  baseDomain: string;
  /** For the unknown-device check (the console host never routes here). */
  config: { baseUrl: string; baseDomain: string };
  registry: TunnelRegistry;
  /** This process in `tunnel_instances`: a device held by another is forwarded to that one's front. */
  instance: string;
  cookies: CookieChecker;
  logger: Logger;
}

const AUTH_PATH = "/.outpost/auth";

/**
 * The HTTP virtual-host front. It serves exactly ONE request per client connection and answers with
 * `Connection: close`: each request is routed by its own Host header over its own channel, so a proxy
 * that reuses connections across hosts (Caddy does) can never send one tenant's request to another
 * device (STACK-NOTES, "cross-tenant leak"). WebSocket upgrades stay joined to their channel.
 */
export function createVhostServer(options: VhostOptions): net.Server {
  return net.createServer((socket) => {
    socket.on("error", () => {});
    handle(socket, options).catch((error) => {
      options.logger.error({ err: error }, "vhost request failed");
      socket.destroy();
    });
  });
}

async function handle(socket: Socket, options: VhostOptions) {
  const head = await readRequestHead(socket);
  if (!head) return respond(socket, 400, page("Bad request", "The request could not be read."));
  const deviceId = deviceIdFromHost(header(head, "host"), options.baseDomain);
  if (!deviceId) return respond(socket, 404, page("Unknown host", "No device has this address."));
  if (await forwarded(socket, head, deviceId, options)) return;
  const url = new URL(head.target, "http://device.invalid");
  if (url.pathname === AUTH_PATH) return authenticate(socket, head, url, deviceId, options);
  const cookie = cookieValue(header(head, "cookie"), ACCESS_COOKIE);
  if (!(await options.cookies.allows(cookie, deviceId))) {
    if (!(await domainAllowed(options.sql, deviceHost(deviceId, options.baseDomain), options.config))) {
      return respond(socket, 404, page("Unknown host", "No device has this address."));
    }
    return respond(
      socket,
      403,
      page("Remote access needed", "Open this device's web UI from its page in the Outpost console."),
    );
  }
  const tunnel = options.registry.get(deviceId);
  if (!tunnel || !tunnel.forwards.has("http")) {
    return respond(
      socket,
      502,
      page(
        "Device not connected",
        "The device has not connected its tunnel (yet). Try again in a few seconds.",
      ),
    );
  }
  let channel: Duplex;
  try {
    channel = await openForward(tunnel, "http");
  } catch (error) {
    if (error instanceof ChannelTimeout) {
      return respond(
        socket,
        504,
        page("Device not answering", "The device's tunnel did not answer in time."),
      );
    }
    return respond(socket, 502, page("Device not connected", "The device's tunnel refused the connection."));
  }
  const upgrade =
    /\bupgrade\b/i.test(header(head, "connection") ?? "") && header(head, "upgrade") !== undefined;
  const headers = head.headers
    .filter(
      ([n]) => !["connection", "keep-alive", "proxy-connection", FORWARDED_HEADER].includes(n.toLowerCase()),
    )
    .map(([n, v]): [string, string] => [
      n,
      n.toLowerCase() === "cookie" ? withoutCookie(v, ACCESS_COOKIE) : v,
    ])
    .filter(([n, v]) => !(n.toLowerCase() === "cookie" && v === ""));
  headers.push(["Connection", upgrade ? "Upgrade" : "close"]);
  channel.write(serializeHead({ ...head, headers }));
  if (head.rest.length > 0) channel.write(head.rest);
  relayResponse(socket, channel);
}

/**
 * Whether the request was dealt with before this front's own checks: passed on to the front of the
 * tunnel process holding the device (which checks it exactly as this one would), or refused for a
 * forward mark that is not valid. A request another front forwarded is never forwarded again.
 */
async function forwarded(socket: Socket, head: RequestHead, deviceId: string, options: VhostOptions) {
  const mark = forwardMark(head, options.secretKey, deviceId);
  if (mark === "bad") {
    respond(socket, 400, page("Bad request", "The request's forward mark is not valid."));
    return true;
  }
  if (mark === "valid" || options.registry.get(deviceId)) return false;
  const holder = await holderOf(options.sql, deviceId);
  if (!holder || holder.instance === options.instance) return false;
  return forwardToHolder(socket, head, holder.http, { secretKey: options.secretKey, deviceId });
}

/**
 * Passes the device's response through: its cookies confined to its host (device-cookies.ts), its
 * connection headers replaced by `close` — except on a protocol switch (a WebSocket), which then stays
 * joined both ways. Our Connection: close tells the client not to reuse this connection.
 */
function relayResponse(socket: Socket, channel: Duplex) {
  let buffered: Buffer = Buffer.alloc(0);
  let answered = false;
  const onData = (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    const end = buffered.indexOf("\r\n\r\n");
    if (end < 0) {
      if (buffered.length > 64 * 1024) {
        channel.destroy();
        socket.destroy();
      }
      return;
    }
    const lines = confineResponseHead(buffered.subarray(0, end).toString("latin1").split("\r\n"));
    const switching = /^HTTP\/1\.[01] 101/.test(lines[0] ?? "");
    const informational = /^HTTP\/1\.[01] 1\d\d/.test(lines[0] ?? "") && !switching;
    const kept = switching
      ? lines
      : lines.filter((l, i) => i === 0 || !/^(connection|keep-alive)\s*:/i.test(l));
    if (!informational && !switching) kept.push("Connection: close");
    answered = true;
    socket.write(Buffer.from(`${kept.join("\r\n")}\r\n\r\n`, "latin1"));
    const rest = buffered.subarray(end + 4);
    buffered = Buffer.alloc(0);
    if (informational) {
      if (rest.length > 0) onData(rest);
      return;
    }
    channel.off("data", onData);
    if (rest.length > 0) socket.write(rest);
    channel.pipe(socket); // backpressure from here on: a slow reader pauses the channel (SSH window)
  };
  channel.on("data", onData);
  socket.pipe(channel);
  socket.setTimeout(300_000, () => {
    socket.destroy();
    channel.destroy();
  });
  // Nothing came back (the device's web UI refused or dropped the connection): say so, not an empty reply.
  const unanswered = () => {
    if (answered) return false;
    answered = true;
    respond(
      socket,
      502,
      page("Device web UI not answering", "The device's web UI closed the connection without an answer."),
    );
    return true;
  };
  // Orderly ends propagate (never destroy on close: queued bytes would be lost); errors destroy.
  channel.on("close", () => unanswered() || socket.end());
  channel.on("error", () => unanswered() || socket.destroy());
  socket.on("error", () => channel.destroy());
}

async function authenticate(
  socket: Socket,
  head: RequestHead,
  url: URL,
  deviceId: string,
  options: VhostOptions,
) {
  const ticket = url.searchParams.get("ticket") ?? "";
  const issued = await redeemTicket(options.sql, options.secretKey, ticket, deviceId);
  if (!issued) {
    return respond(
      socket,
      403,
      page("Link expired", "This link was used already or expired. Open the web UI again from the console."),
    );
  }
  const secure = header(head, "x-forwarded-proto") === "https" ? "; Secure" : "";
  // Host-only (no Domain attribute): the cookie of one device is never sent to another device's host.
  respond(socket, 302, "", {
    location: "/",
    "set-cookie": `${ACCESS_COOKIE}=${issued.cookie}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${issued.maxAgeSeconds}${secure}`,
  });
}

function cookieValue(headerValue: string | undefined, name: string): string | undefined {
  for (const part of (headerValue ?? "").split(";")) {
    const index = part.indexOf("=");
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}

function withoutCookie(headerValue: string, name: string): string {
  return headerValue
    .split(";")
    .filter((part) => part.split("=")[0]?.trim() !== name)
    .map((p) => p.trim())
    .join("; ");
}
