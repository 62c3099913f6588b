import net, { type Socket } from "node:net";
import type { Logger } from "../../platform/logger";
import { deviceIdFromHost } from "../hosts";
import { verifyCredential } from "../token";
import { header, page, readRequestHead, respond } from "./http-head";
import type { DeviceTunnel, TunnelRegistry } from "./registry";
import { ChannelTimeout, join, openForward } from "./stream";

/** How long after its login a tunnel may still be asking for its forwards (the agent asks at once). */
export const FORWARDS_SETTLE_MS = 2000;

export interface MuxOptions {
  secretKey: string;
  baseDomain: string;
  registry: TunnelRegistry;
  logger: Logger;
}

/**
 * The TCP multiplexer: `CONNECT dev-<32hex>.<BASE_DOMAIN>:<port> HTTP/1.1` with `Proxy-Authorization: Bearer
 * <credential>` (a short-lived `mux` credential signed with SECRET_KEY naming that device) opens a stream
 * to the device's `ssh` forward (port 22) or to a port its agent forwards (`tcp:<port>`, its
 * `tunnel.forward_ports`; another port: 403). Without a valid credential: 407, and the device sees nothing.
 */
export function createMuxServer(options: MuxOptions): net.Server {
  // Half-open: a forwarded client that has sent all it will (`shutdown(SHUT_WR)`) still reads the answer.
  return net.createServer({ allowHalfOpen: true }, (socket) => {
    socket.on("error", () => {});
    handle(socket, options).catch((error) => {
      options.logger.error({ err: error }, "multiplexer request failed");
      socket.destroy();
    });
  });
}

async function handle(socket: Socket, options: MuxOptions) {
  const head = await readRequestHead(socket);
  if (!head || head.method !== "CONNECT") {
    return respond(socket, 400, page("Bad request", "Only CONNECT host:port is served here."));
  }
  const match = /^([^:]+):(\d+)$/.exec(head.target);
  const deviceId = match ? deviceIdFromHost(match[1], options.baseDomain) : undefined;
  const port = Number(match?.[2]);
  if (!deviceId || !Number.isInteger(port) || port < 1 || port > 65535)
    return respond(socket, 404, page("Unknown host", "No such device endpoint."));
  const auth = header(head, "proxy-authorization") ?? "";
  const credential = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
  const claims = verifyCredential(options.secretKey, "mux", credential);
  if (!claims || claims.d !== deviceId) {
    return respond(socket, 407, page("Credential needed", "A valid multiplexer credential is required."), {
      "proxy-authenticate": 'Bearer realm="outpost"',
    });
  }
  const tunnel = options.registry.get(deviceId);
  const forward = port === 22 ? "ssh" : `tcp:${port}`;
  if (!tunnel) return respond(socket, 502, page("Device not connected", "The device has no tunnel."));
  if (!(await forwardOffered(tunnel, forward)))
    return respond(socket, 403, page("Port not forwardable", `The device does not forward port ${port}.`));
  try {
    const channel = await openForward(tunnel, forward);
    socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.rest.length > 0) channel.write(head.rest);
    join(socket, channel);
  } catch (error) {
    const status = error instanceof ChannelTimeout ? 504 : 502;
    respond(socket, status, page("Device not answering", "The device's tunnel did not answer."));
  }
}

/**
 * Whether the tunnel offers `forward`. The registry has a tunnel from its login, and the agent asks for its
 * forwards a few milliseconds later: a stream in that gap (a client that saw the device connect) waits
 * for them, until FORWARDS_SETTLE_MS after the login, rather than being refused a port about to be offered.
 */
async function forwardOffered(tunnel: DeviceTunnel, forward: string): Promise<boolean> {
  const settled = tunnel.connectedAt.getTime() + FORWARDS_SETTLE_MS;
  for (let i = 0; i < 200 && !tunnel.forwards.has(forward) && Date.now() < settled; i++) await Bun.sleep(10);
  return tunnel.forwards.has(forward);
}
