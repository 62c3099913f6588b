import net from "node:net";
import { api, resolveDevice } from "./api";
import { CliError, type Credentials } from "./credentials";

interface Forward {
  lease_id: string;
  expires_at: string;
  port: number;
  connect_path: string;
}

/** Why the server closed a forwarded connection (modules/remote-access/forward-routes.ts's codes). */
const CLOSED: Record<number, string> = {
  4403: "the device does not forward this port (its agent's tunnel.forward_ports)",
  4404: "the forward's remote access ended",
  4502: "the device's remote-access tunnel did not come up",
  4504: "the device did not answer (frozen device?)",
  1011: "the server could not reach the device",
};

/** `5900:5900`, `15900:5900` (local:device), or one port for both. */
export function parsePorts(spec: string): { local: number; device: number } {
  const match = /^(?:(\d{1,5}):)?(\d{1,5})$/.exec(spec.trim());
  const device = Number(match?.[2]);
  const local = match?.[1] === undefined ? device : Number(match[1]);
  const valid = (port: number, min = 1) => Number.isInteger(port) && port >= min && port <= 65535;
  if (!match || !valid(local, 0) || !valid(device))
    throw new CliError(`"${spec}" is not <local-port>:<device-port> (ports 1 to 65535), e.g. 5900:5900`);
  return { local, device };
}

export interface ForwardOptions {
  device: string;
  ports: string;
  /** Called once listening (tests); by default a line on stderr. */
  ready?: (address: string) => void;
  log?: (line: string) => void;
}

/**
 * `outpost forward <device> L:D`: listens on 127.0.0.1:L and carries each connection to port D on the
 * device through its tunnel (one WebSocket per connection). Holds a lease while it runs, released on
 * Ctrl-C. Resolves with the exit code when stopped by a signal.
 */
export async function runForward(credentials: Credentials, options: ForwardOptions): Promise<number> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const { local, device: port } = parsePorts(options.ports);
  const device = await resolveDevice(credentials, options.device);
  if (!device.online)
    throw new CliError(`${device.name} is offline: remote access needs a device that is online`, 1);
  const open = async () =>
    (await api<{ data: Forward }>(credentials, "POST", `/api/v1/devices/${device.id}/forwards`, { port }))
      .data;
  let forward = await open();
  const wsBase = credentials.url.replace(/^http/, "ws");

  const carry = (client: net.Socket, retried = false) => {
    const ws = new WebSocket(`${wsBase}${forward.connect_path}`, {
      headers: { authorization: `Bearer ${credentials.token}` },
    } as unknown as string[]);
    ws.binaryType = "arraybuffer";
    let opened = false;
    let ended = false;
    client.pause();
    client.on("data", (chunk: Buffer) => ws.send(chunk));
    client.on("end", () => {
      if (ws.readyState === WebSocket.OPEN) ws.send("end");
    });
    client.on("error", () => ws.close());
    client.on("close", () => {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(1000);
    });
    ws.addEventListener("message", (event) => {
      if (event.data === "open") {
        opened = true;
        client.resume();
      } else if (event.data === "end") {
        ended = true;
        client.end();
      } else if (event.data instanceof ArrayBuffer) client.write(new Uint8Array(event.data));
    });
    ws.addEventListener("close", (event) => {
      // The lease lapsed while no connection was open: open a new one and try this connection again.
      if (event.code === 4404 && !retried && !opened) {
        void open().then(
          (next) => {
            forward = next;
            client.removeAllListeners();
            carry(client, true);
          },
          (error: Error) => {
            log(`outpost: ${error.message}`);
            client.destroy();
          },
        );
        return;
      }
      if (!opened || event.code !== 1000) {
        log(
          `outpost: connection to ${device.name} port ${port} closed: ${CLOSED[event.code] ?? `code ${event.code}`}`,
        );
        client.destroy();
      } else if (!ended) client.end();
    });
  };

  const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => carry(client));
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          error.code === "EADDRINUSE"
            ? `127.0.0.1:${local} is in use: choose another local port`
            : `cannot listen on 127.0.0.1:${local}: ${error.message}`,
          1,
        ),
      ),
    );
    server.listen(local, "127.0.0.1", () => resolve());
  });
  const address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  (options.ready ?? ((a) => log(`Forwarding ${a} → ${device.name} port ${port} (Ctrl-C to stop)`)))(address);
  return await new Promise<number>((resolve) => {
    const stop = async () => {
      server.close();
      await api(credentials, "DELETE", `/api/v1/devices/${device.id}/forwards/${forward.lease_id}`).catch(
        () => {},
      );
      resolve(0);
    };
    process.once("SIGINT", () => void stop());
    process.once("SIGTERM", () => void stop());
  });
}
