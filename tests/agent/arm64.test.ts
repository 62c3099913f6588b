// The arm64 build of `npm run build:agent`, run under qemu-user (Debian's qemu-user with the arm64 C
// library from libc6-arm64-cross): its version stamp, then a full register → approve → register →
// poll against a real Outpost on loopback.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { agentBinary } from "../helpers/agent-binary";
import { startTestApp } from "../helpers/app";
import { REPO_ROOT, runAgent, tempDir } from "./helpers.ts";

const BINARY = path.join(REPO_ROOT, "dist", "outpost-agent-linux-arm64");
const QEMU = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", BINARY];
const tmp = tempDir("outpost-arm64-");
const app = await startTestApp();

beforeAll(() => agentBinary("arm64"), 300_000);
afterAll(() => tmp.cleanup());

const env = () => ({
  HOME: path.join(tmp.dir, "home"),
  OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state"),
  OUTPOST_AGENT_SERVER_URL: app.url,
  OUTPOST_AGENT_PRODUCT_NAME: "arm-gateway",
  OUTPOST_AGENT_REGISTER_PENDING_POLL_S: "0.2",
  OUTPOST_AGENT_LOG_LEVEL: "warn",
});

describe("arm64 agent under qemu-user", () => {
  test("is an aarch64 executable with its build stamp and checksum", async () => {
    expect(fs.readFileSync(BINARY).subarray(18, 20).readUInt16LE()).toBe(183); // e_machine EM_AARCH64
    const v = await runAgent(["--version"], env(), { executable: QEMU, cwd: tmp.dir });
    expect(v.code).toBe(0);
    expect(v.stdout.trim()).toMatch(/^\d+\.\d+\.\d+\+\w+, built \d{4}-\d{2}-\d{2} \(linux-arm64\)$/);
    const digest = new Bun.CryptoHasher("sha256").update(fs.readFileSync(BINARY)).digest("hex");
    expect(fs.readFileSync(`${BINARY}.sha256`, "utf8")).toBe(`${digest}  outpost-agent-linux-arm64\n`);
  }, 60_000);

  test("registers, is approved, polls: the server stores its telemetry", async () => {
    const pending = await runAgent(["register", "--max-attempts", "1"], env(), {
      executable: QEMU,
      cwd: tmp.dir,
      timeoutMs: 60_000,
    });
    expect(pending.code).toBe(3); // waiting for approval: no token yet
    const [device] = await app.database.sql<{ id: string }[]>`
      select id::text from devices where product_name = 'arm-gateway'`;
    expect(device).toBeDefined();
    const token = await app.token("operator");
    const approval = await app.fetch("/api/v1/devices/approval", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ids: [device!.id], approval_status: "approved" }),
    });
    expect(approval.status).toBe(200);
    const registered = await runAgent(["register", "--max-attempts", "3"], env(), {
      executable: QEMU,
      cwd: tmp.dir,
      timeoutMs: 60_000,
    });
    expect(registered.code).toBe(0);
    const poll = await runAgent(["poll", "--once"], env(), {
      executable: QEMU,
      cwd: tmp.dir,
      timeoutMs: 90_000,
    });
    expect(poll.code).toBe(0);
    const [stored] = await app.database.sql<{ n: number; cpu: number | null }[]>`
      select count(*)::int as n,
        max((payload #>> '{scripts,cpu,data,output,usage_pct}')::float) as cpu
      from telemetry_events where device_id = ${device!.id}::uuid`;
    expect(stored!.n).toBe(1);
    expect(stored!.cpu).toBeGreaterThanOrEqual(0);
  }, 240_000);
});
