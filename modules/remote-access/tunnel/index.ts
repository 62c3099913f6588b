import type net from "node:net";
import os from "node:os";
import type { Clock } from "../../../shared/clock";
import type { Config } from "../../platform/config";
import type { Database } from "../../platform/database";
import { loadHostKey } from "../../platform/host-key";
import type { Logger } from "../../platform/logger";
import { CookieChecker } from "../tickets";
import { createDataServer } from "./data-plane";
import { announceInstance, reachableHost } from "./instances";
import { createMuxServer } from "./mux";
import { TunnelRegistry } from "./registry";
import { createSshServer, watchLeases } from "./ssh-server";
import { forgetInstance } from "./state";
import { createVhostServer } from "./vhost";

export interface RunningTunnel {
  sshPort: number;
  httpPort: number;
  muxPort: number;
  dataPort: number;
  fingerprint: string;
  registry: TunnelRegistry;
  stop(): Promise<void>;
}

function listen(server: net.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve((server.address() as net.AddressInfo).port);
    });
  });
}

/**
 * The sockets a listener accepted and still holds. close() waits for all of them to end, and some
 * never end on their own (a web process's link to the multiplexer, a device's idle work connection, an
 * HTTP keep-alive): stopping after terminal sessions hung until a second Ctrl-C. The SSH listener is
 * not tracked: its connections are the devices' tunnels, which stop() closes itself.
 */
function trackConnections(server: net.Server): Set<net.Socket> {
  const open = new Set<net.Socket>();
  server.on("connection", (socket: net.Socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });
  return open;
}

/** Stops accepting, gives what is open CLOSE_GRACE_MS (of `clock`) to finish, then ends the rest. */
async function closeServer(server: net.Server, open: Set<net.Socket>, clock: Clock): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const timer = clock.setTimeout(() => {
    for (const socket of open) socket.destroy();
  }, CLOSE_GRACE_MS);
  await closed;
  timer.clear();
}

/** How long stopping waits for open connections before ending them. */
export const CLOSE_GRACE_MS = 2_000;

/**
 * Starts the tunnel role: SSH server, data plane, HTTP vhost front, TCP multiplexer, and the lease watch.
 */
export async function startTunnel(
  config: Config,
  database: Database,
  logger: Logger,
  clock: Clock,
): Promise<RunningTunnel> {
  const hostKey = loadHostKey(config.dataDir);
  const registry = new TunnelRegistry();
  const instance = `${os.hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
  const data = createDataServer({ secretKey: config.secretKey, registry, logger });
  const dataOpen = trackConnections(data);
  const dataPort = await listen(data, config.tunnelDataPort, config.tunnelHost);
  const sshOptions = {
    sql: database.sql,
    secretKey: config.secretKey,
    hostKey: hostKey.privateKey,
    registry,
    instance,
    logger,
    dataPort,
  };
  const ssh = createSshServer(sshOptions);
  const vhost = createVhostServer({
    sql: database.sql,
    secretKey: config.secretKey,
    baseDomain: config.baseDomain,
    config,
    registry,
    instance,
    cookies: new CookieChecker(database.sql, config.secretKey),
    logger,
  });
  const vhostOpen = trackConnections(vhost);
  const mux = createMuxServer({
    secretKey: config.secretKey,
    baseDomain: config.baseDomain,
    registry,
    logger,
  });
  const muxOpen = trackConnections(mux);
  const httpPort = await listen(vhost, config.tunnelHttpPort, config.tunnelHost);
  const muxPort = await listen(mux, config.tunnelMuxPort, config.tunnelMuxHost);
  // Announced before the SSH listener takes a tunnel, so the other processes can route to it at once.
  const leave = await announceInstance(
    database.sql,
    {
      instance,
      http: { host: reachableHost(config.tunnelHost, config.tunnelAdvertiseHost), port: httpPort },
      mux: { host: reachableHost(config.tunnelMuxHost, config.tunnelAdvertiseHost), port: muxPort },
    },
    () => registry.all().map((t) => ({ deviceId: t.deviceId, forwards: [...t.forwards.keys()] })),
    (error) => logger.error({ err: error }, "tunnel instance heartbeat failed"),
  );
  const sshPort = await new Promise<number>((resolve, reject) => {
    ssh.once("error", reject);
    ssh.listen(config.tunnelSshPort, config.tunnelHost, () =>
      resolve((ssh.address() as net.AddressInfo).port),
    );
  });
  const stopWatch = watchLeases(sshOptions);
  logger.info(
    { sshPort, httpPort, muxPort, dataPort, fingerprint: hostKey.fingerprint, instance },
    "tunnel role listening",
  );
  return {
    sshPort,
    httpPort,
    muxPort,
    dataPort,
    fingerprint: hostKey.fingerprint,
    registry,
    async stop() {
      stopWatch();
      for (const tunnel of registry.all()) tunnel.close("tunnel process stopping");
      await Promise.all([
        closeServer(vhost, vhostOpen, clock),
        closeServer(mux, muxOpen, clock),
        closeServer(data, dataOpen, clock),
        new Promise<void>((resolve) => ssh.close(() => resolve())),
      ]);
      await forgetInstance(database.sql, instance).catch(() => {});
      await leave().catch(() => {});
    },
  };
}
