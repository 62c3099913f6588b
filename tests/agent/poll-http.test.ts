import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { utils } from "ssh2";
import { detectIdentity } from "../../agent/identity.ts";
import { AGENT_VERSION } from "../../agent/version.ts";
import { secretFingerprint } from "../../shared/secret-fingerprint.ts";
import { BUILTINS, DEVICE_ID, HOST_KEY, type Json, startFakeDeviceApi, TOKEN } from "./fake-device-api.ts";
import { runAgent, scriptText } from "./helpers.ts";

/**
 * `outpost-agent poll --once` and `status` as subprocesses against a fake device API
 * (tests/agent/fake-device-api.ts): the heartbeat body, commands and their results, a rotated token.
 */
const fake = startFakeDeviceApi();
const { api, env } = fake;
afterAll(() => fake.stop());
const identity = detectIdentity(null);
const sshKey = utils.generateKeyPairSync("ed25519").public;
const probeV1 = scriptText(
  "probe",
  1,
  'function main() { return { answer: 42, load: Number(read_file("/proc/loadavg").split(" ")[0]) }; }',
  "type: object\nrequired: [answer]\nproperties:\n  answer: { type: integer }\n  load: { type: number }",
);

beforeAll(async () => {
  // Registered once (the fake API approves on the second call): every test here polls as that device.
  const registered = await runAgent(["register", "--max-attempts", "5"], env());
  expect(registered.code).toBe(0);
});

describe("agent polling against a fake device API", () => {
  test("poll: heartbeat body, deferred payloads, commands, one results request", async () => {
    api.heartbeatReplies = [
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
    const before = api.requests.length;
    const r = await runAgent(["poll", "--once"], env());
    expect(r.code).toBe(0);
    const seen = api.requests.slice(before);
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
    expect(fs.readFileSync(path.join(fake.dir, "ssh", "authorized_keys"), "utf8")).toContain(
      "outpost-session:sess-42",
    );
    expect(r.stderr).toContain("not a tunnel token; no tunnel started");
  }, 30000);

  test("the next heartbeat carries the installed script's output and schema; remove_script takes it out", async () => {
    api.heartbeatReplies = [
      {
        data: {
          commands: [
            { command_id: "c-rm", type: "remove_script", args: ["probe"], queued_at: "2026-01-01T00:00:00Z" },
          ],
        },
      },
    ];
    const before = api.requests.length;
    expect((await runAgent(["poll", "--once"], env())).code).toBe(0);
    const hb = api.requests.slice(before).find((q) => q.path.endsWith("/heartbeat"))!.body;
    expect(hb.telemetry.scripts.probe.data).toMatchObject({
      status: "success",
      validation_status: "valid",
      output: { answer: 42 },
    });
    expect(hb.telemetry.scripts.deferred.data.output).toEqual({ deferred: true });
    expect(hb.telemetry.meta.schema_definition.properties.probe.required).toEqual(["answer"]);
    const results = api.requests.slice(before).find((q) => q.path.endsWith("/command_results"))!.body.results;
    expect(results).toEqual([
      {
        command_id: "c-rm",
        status: "OK",
        output: { name: "probe", version: 1, removed: [expect.objectContaining({ version: 1 })] },
      },
    ]);

    const again = api.requests.length;
    expect((await runAgent(["poll", "--once"], env())).code).toBe(0);
    const hb3 = api.requests.slice(again).find((q) => q.path.endsWith("/heartbeat"))!.body;
    expect(hb3.telemetry.scripts.probe).toBeUndefined();
    expect(hb3.telemetry.meta.schema_definition.properties.probe).toBeUndefined();
    // no commands → no results request
    expect(api.requests.slice(again).some((q) => q.path.endsWith("/command_results"))).toBe(false);
  }, 30000);

  test("a server that rejects uncorrelatable results gets the correlatable ones re-posted", async () => {
    api.rejectEmptyIds = true;
    api.heartbeatReplies = [
      { data: { commands: [{ type: "list_scripts" }, { command_id: "c-ok", type: "list_scripts" }] } },
    ];
    const before = api.requests.length;
    expect((await runAgent(["poll", "--once"], env())).code).toBe(0);
    const posts = api.requests.slice(before).filter((q) => q.path.endsWith("/command_results"));
    expect(posts).toHaveLength(2);
    expect(posts[0].body.results.map((x: { command_id: string }) => x.command_id)).toEqual(["", "c-ok"]);
    expect(posts[1].body.results.map((x: { command_id: string }) => x.command_id)).toEqual(["c-ok"]);
    api.rejectEmptyIds = false;
  }, 30000);

  test("a heartbeat answered 401 makes the daemon register again and use the new token", async () => {
    api.validToken = "tok_rotated-456";
    const before = api.requests.length;
    const first = await runAgent(["poll", "--once"], env());
    expect(first.code).toBe(1);
    expect(first.stderr).toContain("401 invalid_api_key");
    expect(first.stderr).toContain("registered again and received a new token");
    expect(api.requests.slice(before).map((q) => q.path)).toEqual([
      `/api/v1/devices/${DEVICE_ID}/heartbeat`,
      "/api/v1/devices/register",
    ]);
    expect(JSON.parse(fs.readFileSync(path.join(fake.dir, "state", "identity.json"), "utf8")).token).toBe(
      "tok_rotated-456",
    );
    const second = await runAgent(["poll", "--once"], env());
    expect(second.code).toBe(0);
    expect(api.requests.at(-1)?.query.api_key).toBe("tok_rotated-456");
    api.validToken = TOKEN;
  }, 30000);

  test("status shows identity, server, last poll and scripts", async () => {
    const r = await runAgent(["status", "--json"], env());
    expect(r.code).toBe(0);
    const status = JSON.parse(r.stdout);
    expect(status.device_id).toBe(DEVICE_ID);
    expect(status.server_url).toBe(`${fake.url}`);
    // `poll --once` has exited: no daemon, so no tunnel state to tell.
    expect(status.daemon).toEqual({ running: false, reason: "no daemon state" });
    expect(status.tunnel).toBeNull();
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
      "Secret",
      "Last poll",
      "Scripts",
      "Daemon",
      "Tunnel",
    ]);
    expect(lines[0]).toBe(`Agent:      outpost-agent ${AGENT_VERSION}`);
    expect(lines[1]).toBe("Config:     (defaults)");
    expect(lines[2]).toBe(`Server:     ${fake.url}`);
    expect(lines[3]).toBe(`Device:     registered as ${DEVICE_ID}`);
    expect(lines[4]).toBe(
      `Identity:   ${identity.name}  mac ${identity.mac_address}  ip ${identity.ip_address}  (${identity.interface})`,
    );
    // The fingerprint an operator compares with an identity claim on the device's page.
    const stored = JSON.parse(
      fs.readFileSync(path.join(env().OUTPOST_AGENT_STATE_DIR!, "device-secret.json"), "utf8"),
    );
    expect(lines[5]).toBe(`Secret:     fingerprint ${secretFingerprint(stored.secret)}`);
    expect(lines[6]).toMatch(
      /^Last poll: {2}\d{4}-\d\d-\d\dT[\d:.]+Z ok in \d+ ms \(\d+ scripts, \d+ failed, \d+ commands\)$/,
    );
    expect(lines[7]).toMatch(/^Scripts: {4}.*\bcpu v2\b/);
    expect(lines[8]).toBe("Daemon:     not running (no daemon state)");
    expect(lines[9]).toBe("Tunnel:     unknown: no agent daemon is running");
    expect(r.stdout).not.toContain(TOKEN);
  }, 30000);
});
