/**
 * Several tunnel processes (docs/remote-access.md, "More than one tunnel process"). Runs a web process and
 * two tunnel processes (`./outpost start`, roles web and tunnel) on an embedded PostgreSQL, a device web
 * server and the agents' tunnel clients in this process.
 *
 *   bun bench/remote-access/failover.ts [--devices 20] [--mb 100] [--tunnels 1000] [--idle-s 10]
 *
 * 1. Forwarded download: a --mb MB download direct from the device web server, through the front of the
 *    process holding the device, and through the other front (which forwards to the holder), alternated.
 * 2. Failover: --devices devices, all on tunnel process A (B second in their list); A is killed with
 *    SIGKILL; per device, the time from the kill to the first 200 through B's front: p50, p95, max.
 * 3. --tunnels concurrent tunnels (simulated agents: the agent's tunnel client, in this process) on one
 *    tunnel process: its RSS before and after, and its CPU while they sit idle for --idle-s seconds.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { TunnelClient } from "../../agent/tunnel-client";
import { approveDevices } from "../../modules/devices/service";
import { createApiToken } from "../../modules/operators/service";
import { connectDatabase } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { issueTicket } from "../../modules/remote-access/tickets";
import { freePort, machineLine, numberFlag } from "../machine";
import { pct, rawGet, redeemTicketAt } from "./measure";

const DEVICES = numberFlag("--devices", 20, 1, 500);
const MB = numberFlag("--mb", 100, 1, 2048);
const TUNNELS = numberFlag("--tunnels", 1000, 1, 5000);
const IDLE_S = numberFlag("--idle-s", 10, 1, 300);
const ROUNDS = 3;
const REPO = path.resolve(import.meta.dir, "../..");
const DOMAIN = "failover.bench";
console.log(machineLine());

const dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-failover-"));
const embedded = await startEmbeddedPostgres({ directory: path.join(dir, "pg"), ephemeral: true });
const database = connectDatabase(embedded.url, 4);
const sql = database.sql;
const shared = {
  ...process.env,
  DATABASE_URL: embedded.url,
  DATA_DIR: dir, // one host key for every tunnel process
  HOST: "127.0.0.1",
  TUNNEL_HOST: "127.0.0.1",
  TUNNEL_MUX_PORT: "0",
  TUNNEL_DATA_PORT: "0",
  BASE_DOMAIN: DOMAIN,
  LOG_LEVEL: "warn",
  SECRET_KEY: "bench-secret-key-bench-secret-key-0123456789",
  DEVICE_REGISTER_RATE_LIMIT: "1000000",
};
const spawned: ReturnType<typeof Bun.spawn>[] = [];
function start(env: Record<string, string>) {
  const child = Bun.spawn([path.join(REPO, "outpost"), "start"], {
    cwd: REPO,
    env: { ...shared, ...env },
    stdout: "ignore",
    stderr: "inherit",
  });
  spawned.push(child);
  return child;
}

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

const port = await freePort();
start({ OUTPOST_ROLE: "web", PORT: String(port) });
const url = `http://127.0.0.1:${port}`;
await until(
  () =>
    fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    ),
  60_000,
  "the web process",
);
async function tunnelProcess() {
  const [ssh, http] = [await freePort(), await freePort()];
  const child = start({
    OUTPOST_ROLE: "tunnel",
    TUNNEL_SSH_PORT: String(ssh),
    TUNNEL_HTTP_PORT: String(http),
  });
  await until(
    async () => (await sql`select 1 from tunnel_instances where http_port = ${http}`).length > 0,
    60_000,
    "a tunnel process",
  );
  return { child, ssh, http };
}
const a = await tunnelProcess();
const b = await tunnelProcess();

const big = path.join(dir, "big.bin");
writeFileSync(big, Buffer.alloc(MB * 1024 * 1024, 7));
const web = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: (request) =>
    new URL(request.url).pathname === "/big" ? new Response(Bun.file(big)) : new Response("ok"),
});
const operator = (await createApiToken(database.db, { name: "bench", role: "operator" })).token;
const clients: TunnelClient[] = [];
const hostOf = (id: string) => `dev-${id.replace(/-/g, "")}.${DOMAIN}`;

/** An approved device with an API lease, its access cookie and its heartbeat reply (the tunnel token). */
async function device(i: number) {
  const mac = `02:FA:00:${((i >> 16) & 0xff).toString(16).padStart(2, "0")}:${((i >> 8) & 0xff).toString(16).padStart(2, "0")}:${(i & 0xff).toString(16).padStart(2, "0")}`;
  const register = async () =>
    (
      (await (
        await fetch(`${url}/api/v1/devices/register`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ mac_address: mac, device_secret: `bench-failover-secret-${mac}` }),
        })
      ).json()) as { data: { id: string; api_token?: string } }
    ).data;
  const { id } = await register();
  await approveDevices(sql, [id]);
  const token = (await register()).api_token!;
  const beat = async () =>
    (
      (await (
        await fetch(`${url}/api/v1/devices/${id}/heartbeat?api_key=${token}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"telemetry":{}}',
        })
      ).json()) as { data: { remote_access_token: string; tunnel_host_key: string } }
    ).data;
  await beat();
  const opened = await fetch(`${url}/api/v1/devices/${id}/remote_access`, {
    method: "POST",
    headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
    body: "{}",
  });
  if (opened.status !== 201) throw new Error(`opening a lease answered ${opened.status}`);
  const leaseId = ((await opened.json()) as { data: { lease_id: string } }).data.lease_id;
  const reply = await beat();
  const ticket = await issueTicket(sql, { leaseId, deviceId: id, operatorId: null });
  return { id, host: hostOf(id), reply, ticket };
}

function connect(reply: { remote_access_token: string; tunnel_host_key: string }, servers: number[]) {
  const client = new TunnelClient(
    {
      server: servers.map((p) => `127.0.0.1:${p}`).join(","),
      web_target: `http://127.0.0.1:${web.port!}`,
      ssh_target: "127.0.0.1:22",
    },
    url,
    { info() {}, warn() {} },
  );
  clients.push(client);
  return client.apply(reply.remote_access_token, reply.tunnel_host_key).then(() => client);
}

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
const cpuMs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

try {
  // The devices, all on A (B second in their list).
  const devices = [];
  for (let i = 0; i < DEVICES; i++) devices.push(await device(i));
  for (const d of devices) await connect(d.reply, [a.ssh, b.ssh]);
  await until(() => clients.every((c) => c.status().state === "connected"), 60_000, "every tunnel");
  const cookies = await Promise.all(devices.map((d) => redeemTicketAt(a.http, d.host, d.ticket)));

  // 1. Download: direct, through the holder's front (A), through the other front (B → A).
  const mbps = (r: { bytes: number; ms: number }) => r.bytes / 1024 / 1024 / (r.ms / 1000);
  const rates = { direct: [] as number[], holder: [] as number[], forwarded: [] as number[] };
  const first = devices[0]!;
  for (let round = 1; round <= ROUNDS; round++) {
    const direct = await rawGet(web.port!, "127.0.0.1", "/big");
    const holder = await rawGet(a.http, first.host, "/big", cookies[0]);
    const forwarded = await rawGet(b.http, first.host, "/big", cookies[0]);
    for (const r of [holder, forwarded])
      if (r.sha !== direct.sha) throw new Error("a tunnelled download differs from the direct one");
    rates.direct.push(mbps(direct));
    rates.holder.push(mbps(holder));
    rates.forwarded.push(mbps(forwarded));
  }
  const median = (v: number[]) => pct(v, 50);
  console.log(
    `${MB} MB download, median of ${ROUNDS}: direct ${median(rates.direct).toFixed(0)} MB/s, through the holder's front ${median(rates.holder).toFixed(0)} MB/s (${((100 * median(rates.holder)) / median(rates.direct)).toFixed(0)} % of direct), through the other front ${median(rates.forwarded).toFixed(0)} MB/s (${((100 * median(rates.forwarded)) / median(rates.direct)).toFixed(0)} %)`,
  );

  // 2. Failover.
  const killedAt = performance.now();
  a.child.kill("SIGKILL");
  const back = await Promise.all(
    devices.map(async (d, i) => {
      for (let n = 0; n < 2000; n++) {
        const r = await rawGet(b.http, d.host, "/", cookies[i]).catch(() => ({ status: 0 }));
        if (r.status === 200) return performance.now() - killedAt;
        await Bun.sleep(20);
      }
      throw new Error(`${d.host} did not come back`);
    }),
  );
  console.log(
    `failover of ${DEVICES} devices (kill -9 of their tunnel process → first 200 through the other front): p50 ${pct(back, 50).toFixed(0)} ms, p95 ${pct(back, 95).toFixed(0)} ms, max ${Math.max(...back).toFixed(0)} ms (target ≤ 5000)`,
  );
  for (const c of clients.splice(0)) await c.stop();

  // 3. Many tunnels on one process (B).
  await Bun.sleep(2000);
  const before = rssMb(b.child.pid);
  const many = [];
  for (let i = 0; i < TUNNELS; i++) many.push(await device(100_000 + i));
  for (let i = 0; i < many.length; i += 50)
    await Promise.all(many.slice(i, i + 50).map((m) => connect(m.reply, [b.ssh])));
  await until(() => clients.every((c) => c.status().state === "connected"), 300_000, "every tunnel");
  const tunnels = (await sql`select count(*)::int as n from tunnel_connections`)[0]!.n as number;
  await Bun.sleep(2000);
  const after = rssMb(b.child.pid);
  const cpuBefore = cpuMs(b.child.pid);
  await Bun.sleep(IDLE_S * 1000);
  const idleCpu = (cpuMs(b.child.pid) - cpuBefore) / IDLE_S / 10; // % of one core
  console.log(
    `${TUNNELS} tunnels on one tunnel process (${tunnels} in tunnel_connections): RSS ${before.toFixed(0)} → ${after.toFixed(0)} MB (+${(((after - before) * 1024) / TUNNELS).toFixed(0)} KB per tunnel); idle CPU over ${IDLE_S} s: ${idleCpu.toFixed(1)} % of one core`,
  );
} finally {
  for (const c of clients) await c.stop();
  web.stop(true);
  for (const child of spawned) if (child.exitCode === null) child.kill("SIGINT");
  await Promise.all(spawned.map((c) => c.exited));
  await database.close();
  await embedded.stop();
  rmSync(dir, { recursive: true, force: true });
}
