// Real Debian caddy (tls internal, on-demand, ask → this Outpost's check_domain) in front of the vhost:
// an allowed device hostname gets a certificate and its page through the tunnel (after the ticket); an
// unknown hostname gets no certificate; requests alternating between two devices each reach their own.
import { afterAll, describe, expect, test } from "bun:test";
import type { TunnelClient } from "../../agent/tunnel-client";
import { tempDir } from "../agent/helpers";
import { startTestApp } from "../helpers/app";
import { startCaddy } from "../helpers/caddy";
import {
  connectTunnel,
  deviceWithLease,
  httpsRequest,
  leaseTicket,
  startDeviceWeb,
  statusOf,
  tunnelClient,
} from "./helpers";

const DOMAIN = "remote.test";
const app = await startTestApp({ BASE_DOMAIN: DOMAIN, BASE_URL: "https://console.remote.test" });
const tunnel = app.running.tunnel!;
const operator = await app.token("operator");
const tmp = tempDir("outpost-caddy-");
const caddy = await startCaddy({
  dir: tmp.dir,
  global: `  on_demand_tls {
    ask ${app.url}/api/v1/check_domain
  }
`,
  sites: () => `https://*.${DOMAIN} {
  bind 127.0.0.1
  tls {
    on_demand
  }
  reverse_proxy 127.0.0.1:${tunnel.httpPort}
}
`,
});
const httpsPort = caddy.httpsPort;
const webA = startDeviceWeb("A");
const webB = startDeviceWeb("B");
const clients: TunnelClient[] = [];
afterAll(async () => {
  for (const c of clients) await c.stop();
  await caddy.stop();
  webA.stop();
  webB.stop();
  tmp.cleanup();
});

const httpsGet = (host: string, pathname: string, headers: Record<string, string> = {}) =>
  httpsRequest(httpsPort, host, pathname, headers);

async function connectedDevice(webPort: number) {
  const device = await deviceWithLease(app, operator);
  const client = tunnelClient(app, `http://127.0.0.1:${webPort}`);
  clients.push(client);
  await connectTunnel(client, device.reply);
  const host = `dev-${device.hex}.${DOMAIN}`;
  const ticket = await leaseTicket(app, device);
  const auth = await httpsGet(host, `/.outpost/auth?ticket=${ticket}`);
  expect(statusOf(auth.raw)).toBe(302);
  expect(auth.raw).toMatch(/set-cookie: [^\r\n]*; Secure/i); // Caddy said X-Forwarded-Proto: https
  return { host, cookie: /set-cookie: ([^;\r\n]+)/i.exec(auth.raw)![1]! };
}

describe("behind a real Caddy with on-demand TLS", () => {
  test("an allowed device host gets a certificate and its page after the ticket; an unknown host gets none", async () => {
    const a = await connectedDevice(webA.port);
    const page = await httpsGet(a.host, "/", { cookie: a.cookie });
    expect(page.certificate).toBe(true);
    expect(statusOf(page.raw)).toBe(200);
    expect(page.raw).toContain("device A");
    const noCookie = await httpsGet(a.host, "/");
    expect(statusOf(noCookie.raw)).toBe(403);

    const unknown = await httpsGet(`dev-${"ab".repeat(16)}.${DOMAIN}`, "/");
    expect(unknown.certificate).toBe(false);
    expect(unknown.raw).toBe("");
  });

  test("requests alternating between two devices' hostnames through Caddy each reach their own device", async () => {
    const a = await connectedDevice(webA.port);
    const b = await connectedDevice(webB.port);
    const aBefore = webA.seen.length;
    const bBefore = webB.seen.length;
    for (let i = 0; i < 20; i++) {
      const [target, name] = i % 2 ? [b, "B"] : [a, "A"];
      const response = await httpsGet(target.host, `/n${i}`, { cookie: target.cookie });
      expect(response.raw).toContain(`device ${name}`);
    }
    expect(webA.seen.slice(aBefore)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18].map((i) => `GET /n${i}`));
    expect(webB.seen.slice(bBefore)).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19].map((i) => `GET /n${i}`));
  });
});
