import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { utils } from "ssh2";
import { detectIdentity } from "../../agent/identity.ts";
import { AGENT_VERSION } from "../../agent/version.ts";
import { AGENT_MAIN, BUN, REPO_ROOT, runAgent, scriptText, tempDir } from "./helpers.ts";

/**
 * HTTP-level test of `register` and `poll` (the agent runs as a subprocess) against a fake device API
 * built with Bun.serve in this test. The real server's full-loop test lives with the server.
 */

const DEVICE_ID = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const TOKEN = "tok_abc-123";
let validToken = TOKEN;
const BUILTINS = ["cpu", "disk", "load", "memory", "network", "uptime"];

// biome-ignore lint/suspicious/noExplicitAny: request bodies are free-form JSON
type Json = any;

interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  body: Json;
  at: number;
}

const tmp = tempDir("outpost-http-");
const requests: Recorded[] = [];
let registerCalls = 0;
let heartbeatReplies: unknown[] = [];
let heartbeatStatus = 200;
let rejectEmptyIds = false;
let registerMode: "normal" | "reject" | "pending" | "rejected" = "normal";
let heartbeatDelayMs = 0;
let server: ReturnType<typeof Bun.serve>;
const sshKey = utils.generateKeyPairSync("ed25519").public;
const probeV1 = scriptText(
  "probe",
  1,
  'function main() { return { answer: 42, load: Number(read_file("/proc/loadavg").split(" ")[0]) }; }',
  "type: object\nrequired: [answer]\nproperties:\n  answer: { type: integer }\n  load: { type: number }",
);
const deferredScript = scriptText("deferred", 2, "function main() { return { deferred: true }; }");

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    HOME: path.join(tmp.dir, "home"),
    OUTPOST_AGENT_SERVER_URL: `http://127.0.0.1:${server.port}`,
    OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state"),
    OUTPOST_AGENT_AUTHORIZED_KEYS_PATH: path.join(tmp.dir, "ssh", "authorized_keys"),
    OUTPOST_AGENT_REGISTER_RETRY_BASE_MS: "20",
    OUTPOST_AGENT_REGISTER_PENDING_POLL_S: "0.02",
    OUTPOST_AGENT_PRODUCT_NAME: "test-gateway",
    OUTPOST_AGENT_LOG_LEVEL: "warn",
    // The sshd host key the heartbeat reports (for the terminal's pinning): a file of this test.
    OUTPOST_AGENT_SSH_HOST_KEY_PATH: path.join(tmp.dir, "ssh_host_ed25519_key.pub"),
    ...extra,
  };
}

const HOST_KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ root@device";

beforeAll(() => {
  fs.writeFileSync(path.join(tmp.dir, "ssh_host_ed25519_key.pub"), `${HOST_KEY}\n`);
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const text = req.method === "GET" ? "" : await req.text();
      const rec: Recorded = {
        method: req.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        body: text ? JSON.parse(text) : null,
        at: Date.now(),
      };
      requests.push(rec);
      if (url.pathname === "/api/v1/devices/register") {
        registerCalls++;
        if (registerMode === "reject") {
          return Response.json(
            { error: { code: "invalid_request", message: "mac_address is invalid" } },
            { status: 400 },
          );
        }
        if (registerMode === "pending" || registerMode === "rejected")
          return Response.json({ data: { id: DEVICE_ID, approval_status: registerMode } }, { status: 201 });
        const data: Record<string, unknown> = {
          id: DEVICE_ID,
          mac_address: rec.body.mac_address.toUpperCase(),
          approval_status: "pending",
        };
        if (registerCalls >= 2) Object.assign(data, { approval_status: "approved", api_token: validToken });
        return Response.json({ data }, { status: 201 });
      }
      if (url.searchParams.get("api_key") !== validToken) {
        return Response.json(
          { error: { code: "invalid_api_key", message: "API key is invalid" } },
          { status: 401 },
        );
      }
      if (url.pathname === `/api/v1/devices/${DEVICE_ID}/heartbeat`) {
        if (heartbeatDelayMs) await Bun.sleep(heartbeatDelayMs);
        if (heartbeatStatus !== 200)
          return Response.json({ error: { code: "boom", message: "down" } }, { status: heartbeatStatus });
        const reply = heartbeatReplies.shift() ?? { data: { commands: [] } };
        return Response.json(reply);
      }
      if (url.pathname === `/api/v1/devices/${DEVICE_ID}/command_payloads/ref-deferred`) {
        // like the Outpost server: the payload object itself, no envelope
        return Response.json({
          content_type: "application/javascript",
          name: "deferred",
          data: deferredScript,
        });
      }
      if (url.pathname.startsWith(`/api/v1/devices/${DEVICE_ID}/command_payloads/`)) {
        return Response.json(
          { error: { code: "payload_not_found", message: "Command payload not found" } },
          { status: 404 },
        );
      }
      if (url.pathname === `/api/v1/devices/${DEVICE_ID}/command_results`) {
        const results = rec.body?.results as { command_id: string }[];
        if (rejectEmptyIds && results.some((r) => !r.command_id)) {
          return Response.json(
            { error: { code: "invalid_results", message: "command_id required" } },
            { status: 422 },
          );
        }
        return Response.json({ data: { acknowledged_count: results.length } }, { status: 202 });
      }
      return Response.json({ error: { code: "not_found", message: "no route" } }, { status: 404 });
    },
  });
});

afterAll(() => {
  server.stop(true);
  tmp.cleanup();
});

const identity = detectIdentity(null);

function take(pathname: string) {
  return requests.filter((r) => r.path === pathname);
}

describe("agent against a fake device API", () => {
  test("register retries while pending, then stores {uuid, token} with mode 0600; exact request body", async () => {
    const r = await runAgent(["register", "--max-attempts", "5"], env());
    expect(r.stderr).toContain("registration not complete");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Registered as ${DEVICE_ID}`);
    const regs = take("/api/v1/devices/register");
    expect(regs).toHaveLength(2);
    const body = regs[0].body;
    expect(Object.keys(body).sort()).toEqual([
      "device_secret",
      "mac_address",
      "metadata",
      "product_name",
      "schema_definition",
    ]);
    // The device's secret: created once (0600), the same in every registration, bound once accepted.
    const secretFile = JSON.parse(fs.readFileSync(path.join(tmp.dir, "state", "device-secret.json"), "utf8"));
    expect(body.device_secret).toBe(secretFile.secret);
    expect(body.device_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(regs[1].body.device_secret).toBe(body.device_secret);
    expect(secretFile.bound).toBe(true);
    expect(fs.statSync(path.join(tmp.dir, "state", "device-secret.json")).mode & 0o777).toBe(0o600);
    expect(body.mac_address).toBe(identity.mac_address);
    expect(body.product_name).toBe("test-gateway");
    expect(body.metadata).toEqual({
      hostname: os.hostname(),
      ip_address: identity.ip_address,
      name: `device-${identity.mac_address.replace(/:/g, "")}`,
      interface: identity.interface,
      agent_version: AGENT_VERSION,
      os: { platform: os.platform(), release: os.release(), arch: os.arch() },
    });
    expect(body.schema_definition.product).toBe("test-gateway");
    expect(body.schema_definition.type).toBe("object");
    expect(body.schema_definition.version).toMatch(/^s-[0-9a-f]{12}$/);
    expect(Object.keys(body.schema_definition.properties).sort()).toEqual(BUILTINS);
    expect(body.schema_definition.properties.load.required).toEqual(["load_1m", "load_5m", "load_15m"]);
    // the retry announces the id the server gave while pending
    expect(regs[1].body.metadata.client_uuid).toBe(DEVICE_ID);
    const idFile = path.join(tmp.dir, "state", "identity.json");
    expect(JSON.parse(fs.readFileSync(idFile, "utf8"))).toEqual({ uuid: DEVICE_ID, token: TOKEN });
    expect(fs.statSync(idFile).mode & 0o777).toBe(0o600);
  }, 30000);

  test("poll: heartbeat body, deferred payloads, commands, one results request", async () => {
    heartbeatReplies = [
      {
        data: {
          commands: [
            {
              command_id: "c-install",
              type: "install_script",
              args: [],
              payload: probeV1,
              queued_at: "2026-01-01T00:00:00Z",
            },
            {
              command_id: "c-deferred",
              type: "install_script",
              args: [],
              payload_ref: "ref-deferred",
              queued_at: "2026-01-01T00:00:00Z",
            },
            {
              command_id: "c-gone",
              type: "install_script",
              args: [],
              payload_ref: "ref-missing",
              queued_at: "2026-01-01T00:00:00Z",
            },
            { command_id: "c-list", type: "list_scripts", args: [], queued_at: "2026-01-01T00:00:00Z" },
            { command_id: "c-list", type: "list_scripts", args: [], queued_at: "2026-01-01T00:00:00Z" },
            { type: "list_scripts", args: [], queued_at: "2026-01-01T00:00:00Z" },
            { command_id: "c-reboot", type: "reboot", args: [], queued_at: "2026-01-01T00:00:00Z" },
            {
              command_id: "c-ssh",
              type: "ssh_authorize",
              args: { public_key: sshKey, ttl_seconds: 300, session_ref: "sess-42" },
              queued_at: "2026-01-01T00:00:00Z",
            },
          ],
          remote_access_token: "frp-secret",
        },
      },
    ];
    const before = requests.length;
    const r = await runAgent(["poll", "--once"], env());
    expect(r.code).toBe(0);
    const seen = requests.slice(before);
    expect(seen.map((q) => `${q.method} ${q.path}`)).toEqual([
      `POST /api/v1/devices/${DEVICE_ID}/heartbeat`,
      expect.stringMatching(/^GET .*command_payloads\/ref-(deferred|missing)$/),
      expect.stringMatching(/^GET .*command_payloads\/ref-(deferred|missing)$/),
      `POST /api/v1/devices/${DEVICE_ID}/command_results`,
    ]);
    for (const q of seen) expect(q.query).toEqual({ api_key: TOKEN });

    const hb = seen[0].body;
    expect(Object.keys(hb).sort()).toEqual(["connection_status", "ssh_host_key", "telemetry"]);
    expect(hb.ssh_host_key).toBe(HOST_KEY.split(" ").slice(0, 2).join(" ")); // without its comment
    expect(hb.connection_status).toEqual({ state: "disconnected", active: false });
    expect(Object.keys(hb.telemetry).sort()).toEqual(["device", "meta", "scripts"]);
    expect(hb.telemetry.device).toMatchObject({
      uuid: DEVICE_ID,
      mac_address: identity.mac_address,
      ip_address: identity.ip_address,
      hostname: os.hostname(),
      name: identity.name,
      agent_version: AGENT_VERSION,
    });
    expect(Object.keys(hb.telemetry.scripts).sort()).toEqual(BUILTINS);
    for (const name of BUILTINS) {
      const data = hb.telemetry.scripts[name].data;
      expect(Object.keys(hb.telemetry.scripts[name])).toEqual(["data"]);
      expect(data.status).toBe("success");
      expect(data.validation_status).toBe("valid");
      expect(typeof data.duration_ms).toBe("number");
      expect(typeof data.output).toBe("object");
      expect(data.error).toBeUndefined();
    }
    expect(hb.telemetry.meta.schema_definition.product).toBe("test-gateway");
    expect(Object.keys(hb.telemetry.meta.schema_definition.properties).sort()).toEqual(BUILTINS);
    expect(Date.parse(hb.telemetry.meta.collected_at)).toBeGreaterThan(Date.now() - 60000);
    expect(hb.telemetry.meta.collected_at).toMatch(/Z$/);
    expect(hb.telemetry.meta.errors).toBeUndefined();

    const results = seen[3].body.results as {
      command_id: string;
      status: string;
      error?: string;
      output?: Json;
    }[];
    expect(results.map((x) => [x.command_id, x.status, x.error])).toEqual([
      ["c-install", "OK", undefined],
      ["c-deferred", "OK", undefined],
      ["c-gone", "FAILED", expect.stringMatching(/^payload_fetch_failed: .*404 payload_not_found/)],
      ["c-list", "OK", undefined],
      ["c-list", "FAILED", "duplicate_command_id"],
      ["", "FAILED", "missing_command_id"],
      ["c-reboot", "FAILED", "unsupported command: reboot"],
      ["c-ssh", "OK", undefined],
    ]);
    expect(results[0].output).toMatchObject({ name: "probe", version: 1 });
    expect(results[1].output).toMatchObject({ name: "deferred", version: 2 });
    expect(results[3].output.scripts.map((s: { name: string }) => s.name)).toContain("probe");
    expect(results[7].output).toMatchObject({
      mode: "dynamic_ssh_authorize",
      target_user: "outpost-support",
      session_ref: "sess-42",
    });
    expect(fs.readFileSync(path.join(tmp.dir, "ssh", "authorized_keys"), "utf8")).toContain(
      "outpost-session:sess-42",
    );
    expect(r.stderr).toContain("not a tunnel token; no tunnel started");
  }, 30000);

  test("the next heartbeat carries the installed script's output and schema; remove_script takes it out", async () => {
    heartbeatReplies = [
      {
        data: {
          commands: [
            { command_id: "c-rm", type: "remove_script", args: ["probe"], queued_at: "2026-01-01T00:00:00Z" },
          ],
        },
      },
    ];
    const before = requests.length;
    expect((await runAgent(["poll", "--once"], env())).code).toBe(0);
    const hb = requests.slice(before).find((q) => q.path.endsWith("/heartbeat"))!.body;
    expect(hb.telemetry.scripts.probe.data).toMatchObject({
      status: "success",
      validation_status: "valid",
      output: { answer: 42 },
    });
    expect(hb.telemetry.scripts.deferred.data.output).toEqual({ deferred: true });
    expect(hb.telemetry.meta.schema_definition.properties.probe.required).toEqual(["answer"]);
    const results = requests.slice(before).find((q) => q.path.endsWith("/command_results"))!.body.results;
    expect(results).toEqual([
      {
        command_id: "c-rm",
        status: "OK",
        output: { name: "probe", version: 1, removed: [expect.objectContaining({ version: 1 })] },
      },
    ]);

    const again = requests.length;
    expect((await runAgent(["poll", "--once"], env())).code).toBe(0);
    const hb3 = requests.slice(again).find((q) => q.path.endsWith("/heartbeat"))!.body;
    expect(hb3.telemetry.scripts.probe).toBeUndefined();
    expect(hb3.telemetry.meta.schema_definition.properties.probe).toBeUndefined();
    // no commands → no results request
    expect(requests.slice(again).some((q) => q.path.endsWith("/command_results"))).toBe(false);
  }, 30000);

  test("a server that rejects uncorrelatable results gets the correlatable ones re-posted", async () => {
    rejectEmptyIds = true;
    heartbeatReplies = [
      { data: { commands: [{ type: "list_scripts" }, { command_id: "c-ok", type: "list_scripts" }] } },
    ];
    const before = requests.length;
    expect((await runAgent(["poll", "--once"], env())).code).toBe(0);
    const posts = requests.slice(before).filter((q) => q.path.endsWith("/command_results"));
    expect(posts).toHaveLength(2);
    expect(posts[0].body.results.map((x: { command_id: string }) => x.command_id)).toEqual(["", "c-ok"]);
    expect(posts[1].body.results.map((x: { command_id: string }) => x.command_id)).toEqual(["c-ok"]);
    rejectEmptyIds = false;
  }, 30000);

  test("poll daemon backs off on failures and stops cleanly on SIGTERM", async () => {
    heartbeatStatus = 500;
    const before = requests.length;
    const proc = Bun.spawn([BUN, AGENT_MAIN, "poll"], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        ...env({ OUTPOST_AGENT_POLL_INTERVAL_S: "1", OUTPOST_AGENT_LOG_LEVEL: "info" }),
      },
      stdout: "ignore",
      stderr: "pipe",
    });
    try {
      const beats = () => requests.slice(before).filter((q) => q.path.endsWith("/heartbeat"));
      const deadline = Date.now() + 20000;
      while (beats().length < 3 && Date.now() < deadline) await Bun.sleep(50);
      const [a, b, c] = beats().map((q) => q.at);
      // delays: interval·2^(n-1) with ±25 % jitter → ~1 s, then ~2 s (plus the poll's own duration)
      expect(b - a).toBeGreaterThanOrEqual(700);
      expect(c - b).toBeGreaterThanOrEqual(1450);
      expect(c - b).toBeLessThan(8000);
      const stoppedAt = Date.now();
      proc.kill("SIGTERM");
      const code = await proc.exited;
      expect(code).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(3000);
      const stderr = await new Response(proc.stderr).text();
      expect(stderr).toContain("poll failed");
      expect(stderr).toContain("polling stopped");
      const last = JSON.parse(fs.readFileSync(path.join(tmp.dir, "state", "last-poll.json"), "utf8"));
      expect(last.ok).toBe(false);
      expect(last.error).toMatch(/answered 500/);
    } finally {
      proc.kill("SIGKILL");
      heartbeatStatus = 200;
    }
  }, 30000);

  test("while pending it asks at the steady pending pace; errors back off exponentially", async () => {
    const other = { OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state-pace") };
    const delays = (stderr: string) =>
      stderr
        .split("\n")
        .filter((line) => line.includes("retry_in_ms"))
        .map((line) => JSON.parse(line).retry_in_ms as number);
    registerMode = "pending";
    try {
      // A long error backoff would wait seconds; pending waits 50 ms (±25 %) every time.
      const pending = await runAgent(
        ["register", "--max-attempts", "4"],
        env({
          ...other,
          OUTPOST_AGENT_REGISTER_RETRY_BASE_MS: "5000",
          OUTPOST_AGENT_REGISTER_PENDING_POLL_S: "0.05",
        }),
      );
      expect(pending.code).toBe(1);
      const waits = delays(pending.stderr);
      expect(waits).toHaveLength(3);
      for (const wait of waits) expect(wait >= 37 && wait <= 50).toBe(true);
    } finally {
      registerMode = "normal";
    }
    // With the server unreachable the same agent doubles its wait from the base.
    const down = await runAgent(
      ["register", "--max-attempts", "4"],
      env({
        ...other,
        OUTPOST_AGENT_SERVER_URL: "http://127.0.0.1:9",
        OUTPOST_AGENT_REGISTER_RETRY_BASE_MS: "20",
        OUTPOST_AGENT_REGISTER_PENDING_POLL_S: "60",
      }),
    );
    const backoff = delays(down.stderr);
    expect(backoff).toHaveLength(3);
    expect(backoff[2]! > backoff[0]!).toBe(true);
    expect(backoff[2]! < 1000).toBe(true);
  }, 30000);

  test("register: a 400 is fatal at once; SIGTERM interrupts the pending-approval wait", async () => {
    const other = { OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state-2") };
    registerMode = "reject";
    const before = registerCalls;
    const r = await runAgent(["register"], env(other));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error: registration rejected: POST");
    expect(r.stderr).toContain("answered 400 invalid_request: mac_address is invalid");
    expect(registerCalls - before).toBe(1);

    registerMode = "pending";
    const called = registerCalls;
    const proc = Bun.spawn([BUN, AGENT_MAIN, "register"], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        ...env({ ...other, OUTPOST_AGENT_REGISTER_PENDING_POLL_S: "0.2" }),
      },
      stdout: "ignore",
      stderr: "pipe",
    });
    try {
      // In the pending-approval wait once it was answered "pending" (a fixed sleep could end before a
      // loaded machine had even started the agent, whose default SIGTERM exit is 143).
      for (let i = 0; i < 300 && registerCalls === called; i++) await Bun.sleep(50);
      await Bun.sleep(300);
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(1);
      expect(await new Response(proc.stderr).text()).toContain("error: registration interrupted");
      expect(fs.existsSync(path.join(tmp.dir, "state-2", "identity.json"))).toBe(false);
    } finally {
      proc.kill("SIGKILL");
      registerMode = "normal";
    }
  }, 30000);

  test("SIGINT stops the daemon cleanly: while waiting, and during a heartbeat (aborted at once)", async () => {
    const spawnPoll = () =>
      Bun.spawn([BUN, AGENT_MAIN, "poll"], {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          ...env({ OUTPOST_AGENT_POLL_INTERVAL_S: "30", OUTPOST_AGENT_LOG_LEVEL: "info" }),
        },
        stdout: "ignore",
        stderr: "pipe",
      });
    const beatsSince = (n: number) => requests.slice(n).filter((q) => q.path.endsWith("/heartbeat"));
    const waitForBeat = async (n: number) => {
      const deadline = Date.now() + 20000;
      while (beatsSince(n).length === 0 && Date.now() < deadline) await Bun.sleep(50);
      expect(beatsSince(n)).toHaveLength(1);
    };

    // 1. between polls (the 30 s wait)
    let before = requests.length;
    let proc = spawnPoll();
    try {
      await waitForBeat(before);
      await Bun.sleep(500);
      const stoppedAt = Date.now();
      proc.kill("SIGINT");
      expect(await proc.exited).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(3000);
      expect(await new Response(proc.stderr).text()).toContain("polling stopped");
    } finally {
      proc.kill("SIGKILL");
    }

    // 2. while the heartbeat is in flight (the server answers after 8 s; HTTP timeout 10 s)
    heartbeatDelayMs = 8000;
    before = requests.length;
    proc = spawnPoll();
    try {
      await waitForBeat(before);
      const stoppedAt = Date.now();
      proc.kill("SIGINT");
      expect(await proc.exited).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(3000);
      const stderr = await new Response(proc.stderr).text();
      expect(stderr).toContain("poll interrupted: the agent is stopping");
      expect(stderr).toContain("polling stopped");
    } finally {
      proc.kill("SIGKILL");
      heartbeatDelayMs = 0;
    }
  }, 60000);

  test("register: a rejected device gets its own message and keeps retrying", async () => {
    registerMode = "rejected";
    const before = registerCalls;
    try {
      const r = await runAgent(
        ["register", "--max-attempts", "2"],
        env({ OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state-3") }),
      );
      expect(r.code).toBe(1);
      expect(registerCalls - before).toBe(2);
      expect(r.stderr).toContain(
        `registration refused: device ${DEVICE_ID} was rejected by an operator; still retrying in case it is approved later`,
      );
      expect(r.stderr).toContain("error: registration did not complete after 2 attempts");
      expect(r.stderr).not.toContain("is rejected approval");
    } finally {
      registerMode = "normal";
    }
  }, 30000);

  test("a heartbeat answered 401 makes the daemon register again and use the new token", async () => {
    validToken = "tok_rotated-456";
    const before = requests.length;
    const first = await runAgent(["poll", "--once"], env());
    expect(first.code).toBe(1);
    expect(first.stderr).toContain("401 invalid_api_key");
    expect(first.stderr).toContain("registered again and received a new token");
    expect(requests.slice(before).map((q) => q.path)).toEqual([
      `/api/v1/devices/${DEVICE_ID}/heartbeat`,
      "/api/v1/devices/register",
    ]);
    expect(JSON.parse(fs.readFileSync(path.join(tmp.dir, "state", "identity.json"), "utf8")).token).toBe(
      "tok_rotated-456",
    );
    const second = await runAgent(["poll", "--once"], env());
    expect(second.code).toBe(0);
    expect(requests.at(-1)?.query.api_key).toBe("tok_rotated-456");
    validToken = TOKEN;
  }, 30000);

  test("status shows identity, server, last poll and scripts", async () => {
    const r = await runAgent(["status", "--json"], env());
    expect(r.code).toBe(0);
    const status = JSON.parse(r.stdout);
    expect(status.device_id).toBe(DEVICE_ID);
    expect(status.server_url).toBe(`http://127.0.0.1:${server.port}`);
    expect(status.tunnel.state).toBe("disconnected");
    expect(status.last_poll.ok).toBe(true);
    expect(status.scripts.map((s: { name: string }) => s.name)).toContain("deferred");
    expect(r.stdout).not.toContain(TOKEN);
    expect(r.stdout).not.toContain("tok_rotated");
  }, 30000);

  test("status in plain text: one line per field, no token", async () => {
    const r = await runAgent(["status"], env());
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines.map((l) => l.split(":")[0])).toEqual([
      "Agent",
      "Config",
      "Server",
      "Device",
      "Identity",
      "Last poll",
      "Scripts",
      "Tunnel",
    ]);
    expect(lines[0]).toBe(`Agent:      outpost-agent ${AGENT_VERSION}`);
    expect(lines[1]).toBe("Config:     (defaults)");
    expect(lines[2]).toBe(`Server:     http://127.0.0.1:${server.port}`);
    expect(lines[3]).toBe(`Device:     registered as ${DEVICE_ID}`);
    expect(lines[4]).toBe(
      `Identity:   ${identity.name}  mac ${identity.mac_address}  ip ${identity.ip_address}  (${identity.interface})`,
    );
    expect(lines[5]).toMatch(
      /^Last poll: {2}\d{4}-\d\d-\d\dT[\d:.]+Z ok in \d+ ms \(\d+ scripts, \d+ failed, \d+ commands\)$/,
    );
    expect(lines[6]).toMatch(/^Scripts: {4}.*\bcpu v2\b/);
    expect(lines[7]).toBe("Tunnel:     disconnected");
    expect(r.stdout).not.toContain(TOKEN);
  }, 30000);
});
