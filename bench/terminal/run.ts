/**
 * Browser terminal benchmark. Runs Outpost (`./outpost start`, role all) as a subprocess on an embedded
 * PostgreSQL, a real OpenSSH sshd and the real agent (from source, polling every 30 s), and drives
 * /socket with WebSocket clients in this process, as the page does.
 *
 *   npm run bench:terminal -- [--opens 5] [--keys 300] [--sessions 20] [--load-seconds 10]
 *
 * 1. "Open terminal" → first prompt, with the remote-access lease already held (the device page holds one
 *    while it is open, so the device is fast-polling): POST /devices/:id/terminal, join, first `$ `/`# `.
 * 2. Keystroke → echo: one letter sent on the socket until its echo arrives, through WebSocket → ssh2 →
 *    multiplexer → tunnel → sshd → shell and back; p50/p95 (what the page sees, minus xterm's drawing).
 * 3. --sessions terminals at once, each typing a key every 100 ms for --load-seconds: the Outpost
 *    process's CPU (ms per second) and RSS, and the keystroke latency under that load.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os, { tmpdir } from "node:os";
import path from "node:path";
import { approveDevices } from "../../modules/devices/service";
import { createApiToken } from "../../modules/operators/service";
import { connectDatabase } from "../../modules/platform/database";
import { startEmbeddedPostgres } from "../../modules/platform/embedded-postgres";
import { operatorSession as signedIn } from "../../tests/helpers/sessions";
import { openSocket, startDevice, startTerminal, waitFor } from "../../tests/terminal/helpers";
import { freePort, machineLine, numberFlag } from "../machine";

const args = process.argv.slice(2);
if (args.includes("--help")) {
  console.log("npm run bench:terminal -- [--opens 5] [--keys 300] [--sessions 20] [--load-seconds 10]");
  process.exit(0);
}
const OPENS = numberFlag("--opens", 5, 1, 50);
const KEYS = numberFlag("--keys", 300, 10, 10_000);
const SESSIONS = numberFlag("--sessions", 20, 1, 100);
const LOAD_SECONDS = numberFlag("--load-seconds", 10, 1, 120);
const REPO = path.resolve(import.meta.dir, "../..");
const SECRET_KEY = "bench-secret-key-bench-secret-key-0123456789";
console.log(machineLine());

const dir = mkdtempSync(path.join(tmpdir(), "outpost-bench-terminal-"));
const embedded = await startEmbeddedPostgres({ directory: path.join(dir, "pg"), ephemeral: true });
const database = connectDatabase(embedded.url, 4);
const sql = database.sql;
const [port, sshPort, httpPort, muxPort] = [
  await freePort(),
  await freePort(),
  await freePort(),
  await freePort(),
];
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
    TUNNEL_MUX_PORT: String(muxPort),
    TUNNEL_DATA_PORT: "0",
    BASE_DOMAIN: "bench-terminal.test",
    LOG_LEVEL: "warn",
    SECRET_KEY,
    DEVICE_REGISTER_RATE_LIMIT: "100000",
  },
  stdout: "ignore",
  stderr: "inherit",
});
const url = `http://127.0.0.1:${port}`;
await waitFor(
  () =>
    fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    ),
  60_000,
  "Outpost to be ready",
);
const server = {
  url,
  fetch: (p: string, init?: RequestInit) => fetch(`${url}${p}`, { redirect: "manual", ...init }),
};

async function register(mac: string) {
  const response = await fetch(`${url}/api/v1/devices/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ mac_address: mac, device_secret: `bench-device-secret-${mac}` }),
  });
  return ((await response.json()) as { data: { id: string; api_token?: string } }).data;
}
const mac = "02:BE:7C:00:00:01";
const { id: deviceId } = await register(mac);
await approveDevices(sql, [deviceId]);
const { api_token: deviceToken } = await register(mac);
const device = await startDevice(
  { url, tunnelSshPort: sshPort, device: { id: deviceId, token: deviceToken! } },
  { pollSeconds: 30 },
);

const operatorSession = () => signedIn(database.db, SECRET_KEY, "operator");

/** Opens a terminal and waits for the shell's first prompt; returns the socket and the time it took. */
async function openTerminal(session: { cookie: string; csrf: string }) {
  const started = performance.now();
  const opened = await startTerminal(server, deviceId, session);
  if (opened.status !== 201) throw new Error(`Open terminal answered ${opened.status}`);
  const socket = openSocket(server, opened.data.socket_token, session.cookie);
  await socket.opened;
  socket.send({
    event: "join",
    topic: opened.data.topic,
    payload: {
      session_ref: opened.data.session_ref,
      command_id: opened.data.command_id,
      columns: 120,
      rows: 40,
    },
  });
  await waitFor(() => /[#$] $/.test(socket.output()) || socket.frame("join_error"), 60_000, "the prompt");
  if (socket.frame("join_error")) throw new Error(JSON.stringify(socket.frame("join_error")));
  return { socket, ms: performance.now() - started };
}

let keyIndex = 0;

/**
 * One keystroke's round trip: a letter sent, its echo seen (on the message event itself, not by polling).
 * Letters cycle a–z, so a late echo of the previous key is never taken for this one's.
 */
function keystroke(socket: ReturnType<typeof openSocket>): Promise<number> {
  const key = String.fromCharCode(97 + (keyIndex++ % 26));
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const timer = setTimeout(() => {
      socket.ws.removeEventListener("message", onMessage);
      reject(new Error("no echo within 5 s"));
    }, 5000);
    const onMessage = (event: MessageEvent) => {
      const frame = JSON.parse(String(event.data)) as { event: string; payload: { data?: string } };
      if (frame.event !== "output" || !frame.payload.data?.includes(key)) return;
      clearTimeout(timer);
      socket.ws.removeEventListener("message", onMessage);
      resolve(performance.now() - started);
    };
    socket.ws.addEventListener("message", onMessage);
    socket.send({ event: "input", payload: { data: key } });
  });
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const ms = (v: number) => `${v.toFixed(1)} ms`;

function processStats(pid: number) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const ticks = Number(stat[11]) + Number(stat[12]);
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
  return { cpuMs: (ticks * 1000) / 100, rssMiB: rss };
}

try {
  // The device page's lease: the device polls every 5 s from its next heartbeat on.
  await waitFor(
    async () =>
      (await sql`select 1 from devices where id = ${deviceId} and last_seen_at is not null`).length > 0,
    30_000,
    "the agent's first heartbeat",
  );
  const apiToken = (await createApiToken(database.db, { name: "bench", role: "operator" })).token;
  const lease = await fetch(`${url}/api/v1/devices/${deviceId}/remote_access`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiToken}`, "content-type": "application/json" },
    body: JSON.stringify({ ttl_seconds: 3600 }),
  });
  if (lease.status !== 201) throw new Error(`remote_access answered ${lease.status}: ${await lease.text()}`);
  process.stdout.write("waiting for the device to pick up the lease (its 30 s poll)… ");
  await waitFor(
    async () => (await sql`select 1 from tunnel_connections where device_id = ${deviceId}`).length > 0,
    60_000,
    "the tunnel",
  );
  console.log("tunnel up");

  const opens: number[] = [];
  const latencies: number[] = [];
  const operator = await operatorSession();
  for (let i = 0; i < OPENS; i++) {
    const { socket, ms: took } = await openTerminal(operator);
    opens.push(took);
    process.stdout.write(`open ${i + 1}/${OPENS}: ${ms(took)}\n`);
    if (i < OPENS - 1) {
      socket.send({ event: "leave" });
      await socket.closed;
    } else {
      for (let k = 0; k < KEYS; k++) {
        latencies.push(await keystroke(socket));
        if (k % 60 === 59) socket.send({ event: "input", payload: { data: "\u0015" } }); // Ctrl-U: clear the line
      }
      console.log(
        `keystroke → echo (${KEYS} keys, one session): p50 ${ms(percentile(latencies, 50))}, p95 ${ms(percentile(latencies, 95))}, max ${ms(Math.max(...latencies))}`,
      );
      socket.send({ event: "leave" });
      await socket.closed;
    }
  }
  console.log(
    `open terminal → prompt (lease held, ${OPENS} opens): p50 ${ms(percentile(opens, 50))}, max ${ms(Math.max(...opens))}`,
  );

  const idle = processStats(outpost.pid);
  const sockets: ReturnType<typeof openSocket>[] = [];
  for (let i = 0; i < SESSIONS; i++) sockets.push((await openTerminal(await operatorSession())).socket);
  const open = processStats(outpost.pid);
  console.log(
    `${SESSIONS} sessions open: Outpost RSS ${idle.rssMiB.toFixed(0)} → ${open.rssMiB.toFixed(0)} MiB (${((open.rssMiB - idle.rssMiB) / SESSIONS).toFixed(1)} MiB a session)`,
  );
  const before = processStats(outpost.pid);
  const startedAt = performance.now();
  const loaded: number[] = [];
  await Promise.all(
    sockets.map(async (socket, index) => {
      let sent = 0;
      while (performance.now() - startedAt < LOAD_SECONDS * 1000 && sent < LOAD_SECONDS * 20) {
        const latency = await keystroke(socket);
        if (index === 0) loaded.push(latency);
        if (++sent % 60 === 0) socket.send({ event: "input", payload: { data: "\u0015" } });
        await Bun.sleep(Math.max(0, 100 - latency));
      }
    }),
  );
  const after = processStats(outpost.pid);
  const seconds = (performance.now() - startedAt) / 1000;
  console.log(
    `${SESSIONS} sessions typing 10 keys/s each for ${seconds.toFixed(1)} s: Outpost CPU ${((after.cpuMs - before.cpuMs) / seconds).toFixed(0)} ms/s (${(((after.cpuMs - before.cpuMs) / seconds / 1000) * 100).toFixed(1)} % of one core), RSS ${after.rssMiB.toFixed(0)} MiB; keystroke → echo under load p50 ${ms(percentile(loaded, 50))}, p95 ${ms(percentile(loaded, 95))}`,
  );
  for (const socket of sockets) socket.ws.close();
  console.log(
    JSON.stringify({
      bench: "terminal",
      open_to_prompt_ms: { p50: Math.round(percentile(opens, 50)), max: Math.round(Math.max(...opens)) },
      keystroke_ms: {
        p50: +percentile(latencies, 50).toFixed(2),
        p95: +percentile(latencies, 95).toFixed(2),
      },
      keystroke_loaded_ms: {
        p50: +percentile(loaded, 50).toFixed(2),
        p95: +percentile(loaded, 95).toFixed(2),
      },
      sessions: SESSIONS,
      rss_mib: {
        idle: Math.round(idle.rssMiB),
        open: Math.round(open.rssMiB),
        loaded: Math.round(after.rssMiB),
      },
      cpu_ms_per_s_loaded: Math.round((after.cpuMs - before.cpuMs) / seconds),
      load_average: os.loadavg()[0],
    }),
  );
} finally {
  await device.stop();
  outpost.kill("SIGINT");
  await outpost.exited;
  await database.close();
  await embedded.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
