// Several tunnel processes on one PostgreSQL, as real processes: devices (the agent's own tunnel client)
// spread over two, each device's web UI reachable through either HTTP front (the front that does not
// hold the device forwards to the one that does, which checks cookie and ticket as always) and through
// one Caddy balancing over both; then one is killed with SIGKILL during a download: the download fails
// (curl sees an error, never a short success) and its devices are reachable again within 5 s through
// the other front, and through Caddy.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { TunnelClient, tunnelAddresses } from "../../agent/tunnel-client";
import { approveDevices } from "../../modules/devices/service";
import { createApiToken } from "../../modules/operators/service";
import { issueTicket } from "../../modules/remote-access/tickets";
import { freePort, tempDir } from "../agent/helpers";
import { newMac } from "../devices/helpers";
import { createTestDatabase } from "../helpers/database";
import { startListening } from "../helpers/listener";
import { startOutpostProcess } from "../helpers/process";
import { get, httpsRequest, type Json, startDeviceWeb, statusOf, waitFor } from "./helpers";

const database = await createTestDatabase();
// One DATA_DIR: every tunnel process serves the same host key (the one agents pin).
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-failover-"));
const SECRET_KEY = "failover-test-secret-key-0123456789abcdef";
const BASE_DOMAIN = "failover.test";
const shared = { DATABASE_URL: database.url, SECRET_KEY, DATA_DIR: dataDir, BASE_DOMAIN };
const web = await startOutpostProcess({ ...shared, OUTPOST_ROLE: "web" });

async function tunnelProcess() {
  const [ssh, http] = [await freePort(), await freePort()];
  const process = await startOutpostProcess({
    ...shared,
    OUTPOST_ROLE: "tunnel",
    TUNNEL_SSH_PORT: String(ssh),
    TUNNEL_HTTP_PORT: String(http),
  });
  return { process, ssh, http };
}
const one = await tunnelProcess();
const two = await tunnelProcess();
const fronts = [one, two];
const big = path.join(dataDir, "big.bin");
const BIG_BYTES = 48 * 1024 * 1024;
writeFileSync(big, Buffer.alloc(BIG_BYTES, 7));
// One Caddy in front of both fronts, as deploy/Caddyfile.tunnels (on-demand TLS from its local CA here).
const caddyDir = tempDir("outpost-failover-caddy-");
const caddy = await startListening({
  command: (port) => {
    const file = path.join(caddyDir.dir, "Caddyfile");
    writeFileSync(
      file,
      `{
  admin 127.0.0.1:${port}
  http_port ${port + 1}
  https_port ${port + 2}
  local_certs
  skip_install_trust
  storage file_system ${path.join(caddyDir.dir, "storage")}
  on_demand_tls {
    ask ${web.url}/api/v1/check_domain
  }
}
https://*.${BASE_DOMAIN} {
  bind 127.0.0.1
  tls {
    on_demand
  }
  reverse_proxy 127.0.0.1:${one.http} 127.0.0.1:${two.http} {
    lb_policy round_robin
    fail_duration 10s
    lb_try_duration 5s
  }
}
`,
    );
    return ["/usr/bin/caddy", "run", "--config", file, "--adapter", "caddyfile"];
  },
  ready: () => '"msg":"serving initial configuration"',
  env: {
    PATH: "/usr/bin:/bin",
    HOME: caddyDir.dir,
    XDG_DATA_HOME: path.join(caddyDir.dir, "data"),
    XDG_CONFIG_HOME: path.join(caddyDir.dir, "config"),
  },
});
const throughCaddy = (host: string, cookie: string) => httpsRequest(caddy.port + 2, host, "/", { cookie });
const operator = (await createApiToken(database.db, { name: "failover", role: "operator" })).token;
const clients: TunnelClient[] = [];
const webs: ReturnType<typeof startDeviceWeb>[] = [];

afterAll(async () => {
  for (const client of clients) await client.stop();
  for (const w of webs) w.stop();
  await caddy.stop();
  caddyDir.cleanup();
  for (const p of [one.process, two.process, web]) if (p.process.exitCode === null) await p.interrupt();
  rmSync(dataDir, { recursive: true, force: true });
});

async function register(mac: string) {
  const response = await fetch(`${web.url}/api/v1/devices/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ mac_address: mac, device_secret: `failover-device-secret-${mac}` }),
  });
  return ((await response.json()) as Json).data as { id: string; api_token?: string };
}

/** An approved device with an API lease and its agent's tunnel up, trying `servers` in that order. */
async function leasedDevice(name: string, servers: (number | string)[]) {
  const mac = newMac();
  const { id } = await register(mac);
  await approveDevices(database.sql, [id]);
  const token = (await register(mac)).api_token!;
  const beat = async () => {
    const response = await fetch(`${web.url}/api/v1/devices/${id}/heartbeat?api_key=${token}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ telemetry: {} }),
    });
    return ((await response.json()) as Json).data;
  };
  await beat();
  const opened = await fetch(`${web.url}/api/v1/devices/${id}/remote_access`, {
    method: "POST",
    headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
    body: "{}",
  });
  expect(opened.status).toBe(201);
  const lease = ((await opened.json()) as Json).data as { lease_id: string };
  const reply = await beat();
  const deviceWeb = startDeviceWeb(name, { path: big });
  webs.push(deviceWeb);
  const client = new TunnelClient(
    {
      server: servers.map((s) => (typeof s === "number" ? `127.0.0.1:${s}` : s)).join(","),
      web_target: `http://127.0.0.1:${deviceWeb.port}`,
      ssh_target: "127.0.0.1:22",
    },
    web.url,
    { info() {}, warn() {} },
  );
  clients.push(client);
  const applied = Date.now();
  await client.apply(reply.remote_access_token, reply.tunnel_host_key);
  await waitFor(() => client.status().state === "connected", 15_000, `${name}'s tunnel`);
  const host = `dev-${id.replace(/-/g, "")}.${BASE_DOMAIN}`;
  return { id, name, host, lease, deviceWeb, client, connectedInMs: Date.now() - applied };
}

/** The HTTP port of the tunnel process holding the device, as the registry says. */
async function holderPort(deviceId: string): Promise<number | undefined> {
  const [row] = await database.sql<{ http_port: number }[]>`
    select i.http_port from tunnel_connections c join tunnel_instances i using (instance)
    where c.device_id = ${deviceId}::uuid`;
  return row?.http_port;
}

function curlDownload(port: number, host: string, cookie: string, rate = "4M") {
  return Bun.spawn(
    [
      "curl",
      "-sS",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code} %{size_download}",
      "--limit-rate",
      rate,
      "--max-time",
      "60",
      "-H",
      `Host: ${host}`,
      "-H",
      `Cookie: ${cookie}`,
      `http://127.0.0.1:${port}/big`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
}

describe("two tunnel processes", () => {
  const devices: Awaited<ReturnType<typeof leasedDevice>>[] = [];
  const cookies = new Map<string, string>();

  test("devices on both; every device's web UI through either front; the holder still checks", async () => {
    for (let i = 0; i < 4; i++) {
      const order = i % 2 === 0 ? [one.ssh, two.ssh] : [two.ssh, one.ssh];
      devices.push(await leasedDevice(`unit-${i}`, order));
    }
    await waitFor(
      async () => (await Promise.all(devices.map((d) => holderPort(d.id)))).every(Boolean),
      5000,
      "every tunnel in the registry",
    );
    const holders = await Promise.all(devices.map((d) => holderPort(d.id)));
    expect(holders).toEqual([one.http, two.http, one.http, two.http]);

    for (const [index, device] of devices.entries()) {
      // The ticket redeemed at the front that does NOT hold the device: forwarded, redeemed by the holder.
      const other = fronts.find((f) => f.http !== holders[index])!;
      const ticket = await issueTicket(database.sql, {
        leaseId: device.lease.lease_id,
        deviceId: device.id,
        operatorId: null,
      });
      const auth = await get(other.http, device.host, `/.outpost/auth?ticket=${ticket}`);
      expect(statusOf(auth)).toBe(302);
      const cookie = /set-cookie: ([^;\r\n]+)/i.exec(auth)![1]!;
      cookies.set(device.id, cookie);
      for (const front of fronts) {
        const page = await get(front.http, device.host, "/", { cookie });
        expect(statusOf(page)).toBe(200);
        expect(page).toContain(`device ${device.name}`);
        // The device never sees the front's cookie (it echoes the cookies it got).
        expect(page).not.toContain("outpost_");
      }
      // Without the cookie both fronts refuse (the holder's check, through the forward too).
      for (const front of fronts) expect(statusOf(await get(front.http, device.host, "/"))).toBe(403);
      // A forward mark made up by a client is refused, it never stands in for a check.
      const forged = await get(other.http, device.host, "/", { cookie, "X-Outpost-Forwarded": "x.y" });
      expect(statusOf(forged)).toBe(400);
    }

    // Through Caddy, balancing over both fronts: every request of every device arrives.
    for (const device of devices) {
      for (let i = 0; i < 4; i++) {
        const page = await throughCaddy(device.host, cookies.get(device.id)!);
        expect(statusOf(page.raw)).toBe(200);
        expect(page.raw).toContain(`device ${device.name}`);
      }
    }

    // A WebSocket upgrade through the front that does not hold the device stays joined both ways.
    const device = devices[1]!;
    const other = fronts.find((f) => f.http !== holders[1])!;
    const echoed = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(other.http, "127.0.0.1");
      let text = "";
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no echo: ${text}`));
      }, 10_000);
      socket.on("connect", () =>
        socket.write(
          `GET /ws HTTP/1.1\r\nHost: ${device.host}\r\nCookie: ${cookies.get(device.id)}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
        ),
      );
      socket.on("data", (chunk: Buffer) => {
        text += chunk.toString("latin1");
        if (text.includes("\r\n\r\n") && !text.includes("echo:")) {
          if (!/^HTTP\/1\.1 101/.test(text)) return reject(new Error(text));
          // One masked text frame "hi" (mask 0): the device echoes "echo:hi".
          if (!text.includes("sent")) {
            text += "sent";
            socket.write(Buffer.from([0x81, 0x82, 0, 0, 0, 0, 0x68, 0x69]));
          }
        }
        if (text.includes("echo:hi")) {
          clearTimeout(timer);
          socket.destroy();
          resolve(text);
        }
      });
      socket.on("error", reject);
    });
    expect(echoed).toContain("echo:hi");
  }, 120_000);

  test("kill -9 of a tunnel process mid-download: the download fails, its devices are back within 5 s", async () => {
    expect(devices).toHaveLength(4);
    const onOne = devices.filter((_, i) => i % 2 === 0);
    const victim = onOne[0]!;
    // Downloading through the surviving front (forwarded to the holder, which dies).
    const download = curlDownload(two.http, victim.host, cookies.get(victim.id)!);
    await waitFor(
      () => victim.deviceWeb.seen.includes("GET /big"),
      10_000,
      "the download reaching the device",
    );
    await Bun.sleep(500);
    const killedAt = Date.now();
    one.process.process.kill("SIGKILL");

    // Timed from the kill, while the download is still failing (what it had queued drains first).
    const recovered = Promise.all(
      onOne.map(async (device) => {
        const cookie = cookies.get(device.id)!;
        await waitFor(
          async () => statusOf(await get(two.http, device.host, "/", { cookie })) === 200,
          10_000,
          `${device.name} through the surviving front`,
        );
        return Date.now() - killedAt;
      }),
    );
    const code = await download.exited;
    const [status, size] = (await new Response(download.stdout).text()).split(" ");
    // curl's own verdict: an error (18: transfer closed with bytes remaining; 56: connection reset).
    expect(code).not.toBe(0);
    expect(status).toBe("200");
    expect(Number(size)).toBeGreaterThan(0);
    expect(Number(size)).toBeLessThan(BIG_BYTES);

    expect(Math.max(...(await recovered))).toBeLessThan(5000);
    expect(await holderPort(victim.id)).toBe(two.http);
    // Caddy leaves the dead front out (a refused connection is tried on the other).
    for (const device of onOne) {
      for (let i = 0; i < 2; i++) {
        const page = await throughCaddy(device.host, cookies.get(device.id)!);
        expect(statusOf(page.raw)).toBe(200);
      }
    }
    // The devices the survivor held all along never left it.
    for (const device of devices.filter((_, i) => i % 2 === 1)) {
      expect(statusOf(await get(two.http, device.host, "/", { cookie: cookies.get(device.id)! }))).toBe(200);
    }
    // A whole download through the survivor completes.
    const whole = curlDownload(two.http, victim.host, cookies.get(victim.id)!, "1G");
    expect(await whole.exited).toBe(0);
  }, 120_000);

  test("an agent tries every address of its list, a DNS name's all: past a dead one within 5 s", async () => {
    // `one` is dead now; `localhost` names loopback (and ::1 where the resolver says so, where no
    // tunnel listens: one more address to get past).
    const addresses = await tunnelAddresses([{ host: "localhost", port: two.ssh }]);
    expect(addresses).toContainEqual({ host: "127.0.0.1", port: two.ssh });
    const device = await leasedDevice("listed", [one.ssh, `localhost:${two.ssh}`]);
    expect(device.connectedInMs).toBeLessThan(5000);
    await waitFor(async () => (await holderPort(device.id)) === two.http, 5000, "the registry row");
    const ticket = await issueTicket(database.sql, {
      leaseId: device.lease.lease_id,
      deviceId: device.id,
      operatorId: null,
    });
    const auth = await get(two.http, device.host, `/.outpost/auth?ticket=${ticket}`);
    const cookie = /set-cookie: ([^;\r\n]+)/i.exec(auth)![1]!;
    expect(await get(two.http, device.host, "/", { cookie })).toContain("device listed");
    // A row lost meanwhile (swept while its process could not beat) is put back by the holder.
    await database.sql`delete from tunnel_connections where device_id = ${device.id}::uuid`;
    await waitFor(async () => (await holderPort(device.id)) === two.http, 5000, "the row put back");
  }, 60_000);
});
