/**
 * Remote-access benchmark. Runs Outpost (`./outpost start`, role all) as a subprocess on an embedded
 * PostgreSQL, a device web server (Bun.serve + Bun.file), and tunnel clients in this process.
 *
 *   bun bench/remote-access/run.ts [--mb 100] [--rounds 5] [--devices 50] [--requests 500]
 *
 * 1. Tunnel start: token handed to the client → first 200 through the vhost (what a poll adds on top: the
 *    wait for the agent's next heartbeat, at most poll_interval_s, or 5 s under the fast-poll hint).
 * 2. Lease opened → device web UI answering, through a real agent process (long_poll on and off).
 * 3. A --mb MB download through vhost → tunnel → agent process → device web process vs the same download
 *    direct from the device web process, alternated --rounds times (5).
 * 4. --devices tunnels at once: the Outpost process's RSS before/after, and per-request latency (new
 *    connection each, as the front serves one request per connection) vs direct, p50/p95.
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
import { startAgent, startDeviceWeb } from "./device-side";
import { cpuLine, pct, rawGet, redeemTicketAt, withCpu } from "./measure";

const MB = numberFlag("--mb", 100, 1, 2048);
const ROUNDS = numberFlag("--rounds", 5, 1, 50);
const DEVICES = numberFlag("--devices", 50, 1, 500);
const REQUESTS = numberFlag("--requests", 500, 10, 100_000);
const REPO = path.resolve(import.meta.dir, "../..");
console.log(machineLine());

const dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-remote-"));
const embedded = await startEmbeddedPostgres({ directory: path.join(dir, "pg"), ephemeral: true });
const database = connectDatabase(embedded.url, 4);
const sql = database.sql;
const [port, sshPort, httpPort] = [await freePort(), await freePort(), await freePort()];
const outpost = Bun.spawn([path.join(REPO, "outpost"), "start"], {
  cwd: REPO,
  env: {
    ...process.env,
    DATABASE_URL: embedded.url,
    DATA_DIR: dir,
    PORT: String(port),
    HOST: "127.0.0.1",
    TUNNEL_HOST: "127.0.0.1",
    TUNNEL_SSH_PORT: String(sshPort),
    TUNNEL_HTTP_PORT: String(httpPort),
    TUNNEL_MUX_PORT: "0",
    TUNNEL_DATA_PORT: "0",
    BASE_DOMAIN: "remote.test",
    LOG_LEVEL: "warn",
    SECRET_KEY: "bench-secret-key-bench-secret-key-0123456789",
    DEVICE_REGISTER_RATE_LIMIT: "100000",
  },
  stdout: "ignore",
  stderr: "inherit",
});
const url = `http://127.0.0.1:${port}`;
for (let i = 0; i < 600; i++) {
  if (
    (await fetch(`${url}/readyz`).then(
      (r) => r.status,
      () => 0,
    )) === 200
  )
    break;
  await Bun.sleep(100);
}
const rssMb = () => {
  const status = readFileSync(`/proc/${outpost.pid}/status`, "utf8") as string;
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
};

const big = path.join(dir, "big.bin");
{
  const block = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < block.length; i++) block[i] = (i * 31) & 0xff;
  writeFileSync(big, Buffer.concat(Array.from({ length: MB }, () => block)));
}
const web = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(request) {
    return new URL(request.url).pathname === "/big" ? new Response(Bun.file(big)) : new Response("ok");
  },
});
const operator = (await createApiToken(database.db, { name: "bench", role: "operator" })).token;
const clients: TunnelClient[] = [];
/** Device-side processes to stop at the end. */
const stops: (() => Promise<void>)[] = [];

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

/** An approved device (registered, approved, registered again for its token). */
async function registered(i: number) {
  const mac = `02:BE:00:00:${((i >> 8) & 0xff).toString(16).padStart(2, "0")}:${(i & 0xff).toString(16).padStart(2, "0")}`;
  const reg = () =>
    fetch(`${url}/api/v1/devices/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mac_address: mac, device_secret: `bench-device-secret-${mac}` }),
    });
  const id = ((await (await reg()).json()) as { data: { id: string } }).data.id;
  await approveDevices(sql, [id]);
  const token = ((await (await reg()).json()) as { data: { api_token: string } }).data.api_token;
  return { id, token };
}

async function openLease(id: string) {
  const response = await fetch(`${url}/api/v1/devices/${id}/remote_access`, {
    method: "POST",
    headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
    body: "{}",
  });
  if (response.status !== 201) throw new Error(`opening a lease answered ${response.status}`);
  return ((await response.json()) as { data: { lease_id: string } }).data.lease_id;
}

/** The device's access cookie for a lease, as "Open web UI" gets it (a ticket, then /.outpost/auth). */
async function cookieFor(id: string, leaseId: string) {
  const host = hostOf(id);
  const ticket = await issueTicket(sql, { leaseId, deviceId: id, operatorId: null });
  return redeemTicketAt(httpPort, host, ticket);
}

const hostOf = (id: string) => `dev-${id.replace(/-/g, "")}.remote.test`;

async function device(i: number) {
  const { id, token } = await registered(i);
  const beat = async () =>
    (
      (await (
        await fetch(`${url}/api/v1/devices/${id}/heartbeat?api_key=${token}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"telemetry":{}}',
        })
      ).json()) as {
        data: { remote_access_token: string; tunnel_host_key: string; poll_interval_seconds?: number };
      }
    ).data;
  await beat();
  const leaseId = await openLease(id);
  const reply = await beat();
  return { id, host: hostOf(id), cookie: await cookieFor(id, leaseId), reply };
}

function connect(reply: { remote_access_token: string; tunnel_host_key: string }) {
  const client = new TunnelClient(
    {
      server: `127.0.0.1:${sshPort}`,
      web_target: `http://127.0.0.1:${web.port!}`,
      ssh_target: "127.0.0.1:22",
    },
    url,
    { info() {}, warn() {} },
  );
  clients.push(client);
  return client.apply(reply.remote_access_token, reply.tunnel_host_key).then(() => client);
}

try {
  // 1. Tunnel start.
  const starts: number[] = [];
  let hint: number | undefined;
  for (let i = 0; i < 3; i++) {
    const d = await device(1000 + i);
    hint = d.reply.poll_interval_seconds;
    const t0 = performance.now();
    await connect(d.reply);
    for (let n = 0; n < 400; n++) {
      if ((await rawGet(httpPort, d.host, "/", d.cookie)).status === 200) break;
      await Bun.sleep(10);
    }
    starts.push(performance.now() - t0);
    await clients.pop()!.stop();
  }
  console.log(
    `tunnel start (token → first 200 through the vhost), 3 runs: ${starts.map((s) => s.toFixed(0)).join(", ")} ms`,
  );
  console.log(
    `  + wait for the agent's next poll: ≤ poll_interval_s (default 30 s); fast-poll hint in the reply: ${hint} s`,
  );

  // 2. Lease opened → device web UI answering, through a real agent process (long_poll on: it waits on
  // the server between polls; off: it learns of the lease at its next poll) and the device's web UI
  // in a process of its own.
  const webProcess = await startDeviceWeb(big);
  stops.push(() => webProcess.stop());
  let agentIndex = 0;
  const agentPids = new Map<string, number>();
  const agentDevice = async (longPoll: boolean, pollIntervalS: number) => {
    const { id, token } = await registered(4000 + agentIndex);
    const agent = startAgent({
      serverUrl: url,
      stateDir: path.join(dir, `agent-${agentIndex++}`),
      credentials: { uuid: id, token },
      tunnelServer: `127.0.0.1:${sshPort}`,
      webTarget: `http://127.0.0.1:${webProcess.port}`,
      pollIntervalS,
      longPoll,
    });
    stops.push(() => agent.stop());
    agentPids.set(id, agent.agent.pid);
    await until(
      async () => (await sql`select 1 from devices where id = ${id} and last_seen_at is not null`).length > 0,
      30_000,
      "the agent's first heartbeat",
    );
    await Bun.sleep(500); // into its wait
    return id;
  };
  const tunnelled = async (id: string) =>
    (await sql`select 1 from tunnel_connections where device_id = ${id}`).length > 0;
  /** Opens a lease and times it until the device's web UI answers 200 through the vhost. */
  const leaseToWebUi = async (id: string) => {
    const started = performance.now();
    const leaseId = await openLease(id);
    const cookie = await cookieFor(id, leaseId);
    for (let n = 0; n < 2400 && (await rawGet(httpPort, hostOf(id), "/", cookie)).status !== 200; n++)
      await Bun.sleep(25);
    return { ms: performance.now() - started, leaseId, cookie };
  };
  const endLease = async (id: string, leaseId: string) => {
    await fetch(`${url}/api/v1/devices/${id}/remote_access/${leaseId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${operator}` },
    });
    await until(async () => !(await tunnelled(id)), 30_000, "the tunnel down");
    await Bun.sleep(1000); // the agent polled and waits again
  };
  const longPolling = await agentDevice(true, 30);
  const woken: number[] = [];
  for (let i = 0; i < 3; i++) {
    const { ms, leaseId } = await leaseToWebUi(longPolling);
    woken.push(ms);
    await endLease(longPolling, leaseId);
  }
  console.log(
    `lease opened → device web UI answering, real agent (poll_interval_s 30, long_poll on), 3 runs: ${woken.map((ms) => ms.toFixed(0)).join(", ")} ms (target ≤ 6 s)`,
  );
  const polling = await agentDevice(false, 10);
  const waited: number[] = [];
  for (let i = 0; i < 2; i++) {
    const { ms, leaseId } = await leaseToWebUi(polling);
    waited.push(ms);
    await endLease(polling, leaseId);
  }
  console.log(
    `  the same with long_poll off (poll_interval_s 10), 2 runs: ${waited.map((ms) => ms.toFixed(0)).join(", ")} ms (the wait for the next poll)`,
  );

  // 3. Big download: direct from the device web process vs through vhost → tunnel → agent process →
  // device web process, alternated ROUNDS times (the machine's other work hits both alike; the direct
  // download alone varies by a factor of two from round to round on this machine).
  const { cookie } = await leaseToWebUi(longPolling);
  const mbps = (r: { bytes: number; ms: number }) => r.bytes / 1024 / 1024 / (r.ms / 1000);
  const ratios: number[] = [];
  const processes = {
    outpost: outpost.pid,
    agent: agentPids.get(longPolling)!,
    "device web": webProcess.pid,
  };
  const rates = { direct: [] as number[], tunnelled: [] as number[] };
  for (let round = 1; round <= ROUNDS; round++) {
    const [direct, directCpu] = await withCpu(processes, () => rawGet(webProcess.port, "127.0.0.1", "/big"));
    const [viaTunnel, tunnelCpu] = await withCpu(processes, () =>
      rawGet(httpPort, hostOf(longPolling), "/big", cookie),
    );
    const complete = viaTunnel.sha === direct.sha && viaTunnel.bytes === MB * 1024 * 1024;
    ratios.push(mbps(viaTunnel) / mbps(direct));
    rates.direct.push(mbps(direct));
    rates.tunnelled.push(mbps(viaTunnel));
    console.log(
      `${MB} MB round ${round}: direct ${mbps(direct).toFixed(0)} MB/s, tunnelled ${mbps(viaTunnel).toFixed(0)} MB/s = ${(100 * ratios[ratios.length - 1]!).toFixed(0)} %, same SHA-256: ${complete}`,
    );
    console.log(
      `  CPU ms per 100 MB, tunnelled: ${cpuLine(tunnelCpu, MB)}; direct: ${cpuLine(directCpu, MB)}`,
    );
    if (!complete) throw new Error("the tunnelled download differs");
  }
  console.log(
    `  median of ${ROUNDS}: direct ${pct(rates.direct, 50).toFixed(0)} MB/s, tunnelled ${pct(rates.tunnelled, 50).toFixed(0)} MB/s; tunnelled / direct ${(100 * pct(ratios, 50)).toFixed(0)} % (target ≥ 50 %)`,
  );

  // 4. Many tunnels (tunnel clients in this process: what is measured is the Outpost process).
  await Bun.sleep(1000);
  Bun.gc(true);
  const before = rssMb();
  const many = [];
  for (let i = 0; i < DEVICES; i++) many.push(await device(3000 + i));
  for (const m of many) await connect(m.reply);
  for (let n = 0; n < 200 && clients.some((c) => c.status().state !== "connected"); n++) await Bun.sleep(50);
  await Bun.sleep(1000);
  const after = rssMb();
  console.log(
    `${DEVICES} tunnels: Outpost process RSS ${before.toFixed(0)} → ${after.toFixed(0)} MB (+${(after - before).toFixed(1)} MB)`,
  );
  const viaTunnel: number[] = [];
  const viaDirect: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const m = many[i % many.length]!;
    viaDirect.push((await rawGet(web.port!, "127.0.0.1", "/")).ms);
    const r = await rawGet(httpPort, m.host, "/", m.cookie);
    if (r.status !== 200) throw new Error(`status ${r.status}`);
    viaTunnel.push(r.ms);
  }
  console.log(
    `latency over ${REQUESTS} requests (new connection each): direct p50 ${pct(viaDirect, 50).toFixed(2)} p95 ${pct(viaDirect, 95).toFixed(2)} ms; tunnel p50 ${pct(viaTunnel, 50).toFixed(2)} p95 ${pct(viaTunnel, 95).toFixed(2)} ms; added p95 ${(pct(viaTunnel, 95) - pct(viaDirect, 95)).toFixed(2)} ms`,
  );
} finally {
  for (const c of clients) await c.stop();
  for (const stop of stops) await stop();
  web.stop(true);
  outpost.kill("SIGINT");
  await outpost.exited;
  await database.close();
  await embedded.stop();
  rmSync(dir, { recursive: true, force: true });
}
