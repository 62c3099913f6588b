import type net from "node:net";
import os from "node:os";
import type { Config } from "../../platform/config";
import type { Database } from "../../platform/database";
import { loadHostKey } from "../../platform/host-key";
import type { Logger } from "../../platform/logger";
import { CookieChecker } from "../tickets";
import { createDataServer } from "./data-plane";
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
 * Starts the tunnel role: SSH server, data plane, HTTP vhost front, TCP multiplexer, and the lease watch.
 */
export async function startTunnel(
  config: Config,
  database: Database,
  logger: Logger,
): Promise<RunningTunnel> {
  const hostKey = loadHostKey(config.dataDir);
  const registry = new TunnelRegistry();
  const instance = `${os.hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
  const data = createDataServer({ secretKey: config.secretKey, registry, logger });
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
    cookies: new CookieChecker(database.sql, config.secretKey),
    logger,
  });
  const mux = createMuxServer({
    secretKey: config.secretKey,
    baseDomain: config.baseDomain,
    registry,
    logger,
  });
  const sshPort = await new Promise<number>((resolve, reject) => {
    ssh.once("error", reject);
    ssh.listen(config.tunnelSshPort, config.tunnelHost, () =>
      resolve((ssh.address() as net.AddressInfo).port),
    );
  });
  const httpPort = await listen(vhost, config.tunnelHttpPort, config.tunnelHost);
  const muxPort = await listen(mux, config.tunnelMuxPort, config.tunnelMuxHost);
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
      await Promise.all(
        [vhost, mux, data, ssh as unknown as net.Server].map(
          (s) => new Promise<void>((resolve) => s.close(() => resolve())),
        ),
      );
      await forgetInstance(database.sql, instance).catch(() => {});
    },
  };
}
