import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { detectIdentity } from "../../agent/identity.ts";
import { AGENT_VERSION } from "../../agent/version.ts";
import { BUILTINS, DEVICE_ID, startFakeDeviceApi, TOKEN } from "./fake-device-api.ts";
import { AGENT_MAIN, BUN, REPO_ROOT, runAgent } from "./helpers.ts";

/**
 * `outpost-agent register` as a subprocess against a fake device API (tests/agent/fake-device-api.ts):
 * the exact registration request, the stored identity, pending and rejected answers, backoff, signals.
 */
const fake = startFakeDeviceApi();
const { api, env, take } = fake;
afterAll(() => fake.stop());
const identity = detectIdentity(null);

describe("agent registration against a fake device API", () => {
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
      "labels",
      "mac_address",
      "metadata",
      "product_name",
      "schema_definition",
    ]);
    // The device's secret: created once (0600), the same in every registration, bound once accepted.
    const secretFile = JSON.parse(
      fs.readFileSync(path.join(fake.dir, "state", "device-secret.json"), "utf8"),
    );
    expect(body.device_secret).toBe(secretFile.secret);
    expect(body.device_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(regs[1].body.device_secret).toBe(body.device_secret);
    expect(secretFile.bound).toBe(true);
    expect(fs.statSync(path.join(fake.dir, "state", "device-secret.json")).mode & 0o777).toBe(0o600);
    expect(body.mac_address).toBe(identity.mac_address);
    expect(body.product_name).toBe("test-gateway");
    expect(body.labels).toEqual({}); // none configured: sent empty, which clears any the server held
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
    const idFile = path.join(fake.dir, "state", "identity.json");
    expect(JSON.parse(fs.readFileSync(idFile, "utf8"))).toEqual({ uuid: DEVICE_ID, token: TOKEN });
    expect(fs.statSync(idFile).mode & 0o777).toBe(0o600);
  }, 30000);

  test("while pending it asks at the steady pending pace; errors back off exponentially", async () => {
    const other = { OUTPOST_AGENT_STATE_DIR: path.join(fake.dir, "state-pace") };
    const delays = (stderr: string) =>
      stderr
        .split("\n")
        .filter((line) => line.includes("retry_in_ms"))
        .map((line) => JSON.parse(line).retry_in_ms as number);
    api.registerMode = "pending";
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
      // Still pending when the attempts run out: the normal end of a pending enrolment, not an error.
      expect(pending.code).toBe(3);
      expect(pending.stdout).toContain(`Registered as ${DEVICE_ID}: waiting for approval.`);
      expect(pending.stderr).not.toContain("error:");
      const waits = delays(pending.stderr);
      expect(waits).toHaveLength(3);
      for (const wait of waits) expect(wait >= 37 && wait <= 50).toBe(true);
    } finally {
      api.registerMode = "normal";
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
    const other = { OUTPOST_AGENT_STATE_DIR: path.join(fake.dir, "state-2") };
    api.registerMode = "reject";
    const before = api.registerCalls;
    const r = await runAgent(["register"], env(other));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error: registration rejected: POST");
    expect(r.stderr).toContain("answered 400 invalid_request: mac_address is invalid");
    expect(api.registerCalls - before).toBe(1);

    api.registerMode = "pending";
    const called = api.registerCalls;
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
      for (let i = 0; i < 300 && api.registerCalls === called; i++) await Bun.sleep(50);
      await Bun.sleep(300);
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(1);
      expect(await new Response(proc.stderr).text()).toContain("error: registration interrupted");
      expect(fs.existsSync(path.join(fake.dir, "state-2", "identity.json"))).toBe(false);
    } finally {
      proc.kill("SIGKILL");
      api.registerMode = "normal";
    }
  }, 30000);

  test("register: a rejected device gets its own message and keeps retrying", async () => {
    api.registerMode = "rejected";
    const before = api.registerCalls;
    try {
      const r = await runAgent(
        ["register", "--max-attempts", "2"],
        env({ OUTPOST_AGENT_STATE_DIR: path.join(fake.dir, "state-3") }),
      );
      expect(r.code).toBe(1);
      expect(api.registerCalls - before).toBe(2);
      expect(r.stderr).toContain(
        `registration refused: device ${DEVICE_ID} was rejected by an operator; still retrying in case it is approved later`,
      );
      expect(r.stderr).toContain("error: registration did not complete after 2 attempts");
      expect(r.stderr).not.toContain("is rejected approval");
    } finally {
      api.registerMode = "normal";
    }
  }, 30000);
});
