// The shipped Caddyfiles: all pass `caddy validate`, and the local-trial one (deploy/Caddyfile.local,
// `tls internal { on_demand }` for *.localhost) runs as shipped, its ports from the environment, in front
// of a real Outpost with BASE_DOMAIN=localhost: the console answers on https://localhost, an approved
// device's host gets a certificate from Caddy's local CA and its web UI through the tunnel, an unknown
// host gets none, and the device link carries Caddy's port.
import { afterAll, describe, expect, test } from "bun:test";
import path from "node:path";
import type { TunnelClient } from "../../agent/tunnel-client";
import { REPO_ROOT, tempDir } from "../agent/helpers";
import { startTestApp } from "../helpers/app";
import { caddyEnv, startCaddyFile } from "../helpers/caddy";
import { type ListeningProcess, randomListenPort } from "../helpers/listener";
import {
  connectTunnel,
  deviceWithLease,
  httpsRequest,
  leaseTicket,
  startDeviceWeb,
  statusOf,
  tunnelClient,
} from "./helpers";

const LOCAL = path.join(REPO_ROOT, "deploy/Caddyfile.local");
const tmp = tempDir("outpost-caddy-local-");
const base = randomListenPort(); // Caddy's admin API; HTTP on the next port, HTTPS on the one after
const httpsPort = base + 2;
const app = await startTestApp({ BASE_DOMAIN: "localhost", BASE_URL: `https://localhost:${httpsPort}` });
const operator = await app.token("operator");
const env = {
  ...caddyEnv(tmp.dir),
  CADDY_ADMIN: `127.0.0.1:${base}`,
  CADDY_HTTP_PORT: String(base + 1),
  CADDY_HTTPS_PORT: String(httpsPort),
  OUTPOST_PORT: new URL(app.url).port,
  TUNNEL_HTTP_PORT: String(app.running.tunnel!.httpPort),
};
const web = startDeviceWeb("local");
const clients: TunnelClient[] = [];
let caddy: ListeningProcess | undefined;
afterAll(async () => {
  for (const c of clients) await c.stop();
  await caddy?.stop();
  web.stop();
  tmp.cleanup();
});

function validate(file: string) {
  const run = Bun.spawnSync(["/usr/bin/caddy", "validate", "--config", file, "--adapter", "caddyfile"], {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: run.exitCode, output: `${run.stdout}${run.stderr}` };
}

describe("the shipped Caddyfiles", () => {
  test("deploy/Caddyfile, Caddyfile.local and Caddyfile.tunnels pass caddy validate", () => {
    for (const file of ["deploy/Caddyfile", "deploy/Caddyfile.local", "deploy/Caddyfile.tunnels"]) {
      const result = validate(path.join(REPO_ROOT, file));
      expect(result.output).toContain("Valid configuration");
      expect(result.code).toBe(0);
    }
  });

  test("Caddyfile.local: the console on https://localhost, a device's web UI on its own *.localhost host", async () => {
    caddy = await startCaddyFile(LOCAL, env);
    // Caddy issues the console's internal certificate just after it starts: until then handshakes fail.
    let console = await httpsRequest(httpsPort, "localhost", "/readyz");
    for (let i = 0; i < 100 && !console.certificate; i++) {
      await Bun.sleep(100);
      console = await httpsRequest(httpsPort, "localhost", "/readyz");
    }
    expect(console.certificate).toBe(true);
    expect(statusOf(console.raw)).toBe(200);

    const device = await deviceWithLease(app, operator);
    const host = `dev-${device.hex}.localhost`;
    expect(device.lease.web_url).toBe(`https://${host}:${httpsPort}/`);
    const client = tunnelClient(app, `http://127.0.0.1:${web.port}`);
    clients.push(client);
    await connectTunnel(client, device.reply);
    const auth = await httpsRequest(
      httpsPort,
      host,
      `/.outpost/auth?ticket=${await leaseTicket(app, device)}`,
    );
    expect(statusOf(auth.raw)).toBe(302);
    const cookie = /set-cookie: ([^;\r\n]+)/i.exec(auth.raw)![1]!;
    const page = await httpsRequest(httpsPort, host, "/", { cookie });
    expect(page.certificate).toBe(true);
    expect(statusOf(page.raw)).toBe(200);
    expect(page.raw).toContain("device local");

    const unknown = await httpsRequest(httpsPort, `dev-${"ab".repeat(16)}.localhost`, "/");
    expect(unknown.certificate).toBe(false);
  }, 90_000);
});
