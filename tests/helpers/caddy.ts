// Real Debian Caddy for the tests that meet it (the CLI through a proxy, the device vhost, the system
// suite): one way to write its Caddyfile, keep its state in the test's own folder and wait until it serves.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { type ListeningProcess, startListening } from "./listener";

const CADDY = "/usr/bin/caddy";
const READY = '"msg":"serving initial configuration"';

/** Caddy's environment: its data, config and home inside `dir`, nothing from this process. */
export function caddyEnv(dir: string): Record<string, string> {
  return {
    PATH: "/usr/bin:/bin",
    HOME: dir,
    XDG_DATA_HOME: path.join(dir, "data"),
    XDG_CONFIG_HOME: path.join(dir, "config"),
  };
}

export interface RunningCaddy extends ListeningProcess {
  /** Caddy's HTTPS port (the admin API is on `port`, HTTP on the next). */
  httpsPort: number;
  /** The root certificate of its internal CA (written once it issued the first certificate). */
  rootCa: string;
}

/**
 * Starts Caddy with a Caddyfile written in `dir`, three ports from one: the admin API on `port`, HTTP on
 * the next, HTTPS on the one after; local certificates, stored under `storage` (default `dir/storage`).
 * `global` adds lines to the global options block; `sites` writes the site blocks.
 */
export async function startCaddy(options: {
  dir: string;
  storage?: string;
  global?: string;
  sites: (ports: { port: number; httpsPort: number }) => string;
}): Promise<RunningCaddy> {
  const storage = options.storage ?? path.join(options.dir, "storage");
  const caddyfile = path.join(options.dir, "Caddyfile");
  const caddy = await startListening({
    command: (port) => {
      writeFileSync(
        caddyfile,
        `{
  admin 127.0.0.1:${port}
  http_port ${port + 1}
  https_port ${port + 2}
  local_certs
  skip_install_trust
  storage file_system ${storage}
${options.global ?? ""}}
${options.sites({ port, httpsPort: port + 2 })}`,
      );
      return caddyCommand(caddyfile);
    },
    ready: () => READY,
    env: caddyEnv(options.dir),
  });
  return Object.assign(caddy, {
    httpsPort: caddy.port + 2,
    rootCa: path.join(storage, "pki", "authorities", "local", "root.crt"),
  });
}

/** Starts Caddy with a Caddyfile as it is (one that takes its ports from `env`). */
export function startCaddyFile(file: string, env: Record<string, string>): Promise<ListeningProcess> {
  return startListening({ command: () => caddyCommand(file), ready: () => READY, env, timeoutMs: 30_000 });
}

function caddyCommand(caddyfile: string): string[] {
  return [CADDY, "run", "--config", caddyfile, "--adapter", "caddyfile"];
}
