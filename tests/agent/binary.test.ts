import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { agentBinary } from "../helpers/agent-binary";
import { REPO_ROOT, runAgent, scriptText, tempDir } from "./helpers.ts";

/** The compiled agent (`npm run build:agent`, tests/helpers/agent-binary.ts). */

const BINARY = path.join(REPO_ROOT, "dist", "outpost-agent");
const tmp = tempDir("outpost-bin-");
const DEVICE_ID = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";
let server: ReturnType<typeof Bun.serve>;
const seen: string[] = [];

beforeAll(async () => {
  await agentBinary("x64");
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      seen.push(`${req.method} ${url.pathname}`);
      if (url.pathname === "/api/v1/devices/register") {
        return Response.json(
          { data: { id: DEVICE_ID, approval_status: "approved", api_token: "bin-token" } },
          { status: 201 },
        );
      }
      if (url.pathname.endsWith("/heartbeat")) {
        const body = (await req.json()) as {
          telemetry: { scripts: Record<string, { data: { status: string } }> };
        };
        const ok = Object.values(body.telemetry.scripts).every((s) => s.data.status === "success");
        return Response.json({
          data: { commands: ok ? [{ command_id: "b1", type: "list_scripts", args: [] }] : [] },
        });
      }
      if (url.pathname.endsWith("/command_results"))
        return Response.json({ data: { acknowledged_count: 1 } }, { status: 202 });
      return new Response("not found", { status: 404 });
    },
  });
}, 180000);

afterAll(() => {
  server?.stop(true);
  tmp.cleanup();
});

// The environment the systemd unit (deploy/outpost-agent.service) gives the agent.
const env = () => ({
  BUN_JSC_useDFGJIT: "0",
  BUN_JSC_useFTLJIT: "0",
  BUN_JSC_useOMGJIT: "0",
  HOME: path.join(tmp.dir, "home"),
  OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state"),
  OUTPOST_AGENT_SERVER_URL: `http://127.0.0.1:${server.port}`,
  OUTPOST_AGENT_LOG_LEVEL: "warn",
});

describe("compiled agent binary", () => {
  test("--help and --version", async () => {
    const r = await runAgent(["--help"], env(), { executable: [BINARY], cwd: tmp.dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: outpost-agent [options] [command]");
    const v = await runAgent(["--version"], env(), { executable: [BINARY], cwd: tmp.dir });
    // The build's stamp: version+commit, build date, architecture.
    expect(v.stdout.trim()).toMatch(/^\d+\.\d+\.\d+\+\w+, built \d{4}-\d{2}-\d{2} \(linux-x64\)$/);
    const sums = fs.readFileSync(`${BINARY}-linux-x64.sha256`, "utf8");
    const digest = new Bun.CryptoHasher("sha256").update(fs.readFileSync(BINARY)).digest("hex");
    expect(sums).toBe(`${digest}  outpost-agent-linux-x64\n`);
  });

  test("script test runs the embedded QuickJS sandbox (built-in and file scripts; failure exits 1)", async () => {
    const load = await runAgent(["script", "test", "load"], env(), { executable: [BINARY], cwd: tmp.dir });
    expect(load.code).toBe(0);
    expect(YAML.parse(load.stdout).load_1m).toBeGreaterThanOrEqual(0);
    const bad = path.join(tmp.dir, "bad.js");
    fs.writeFileSync(bad, scriptText("bad", 1, "function main() { for (;;) {} }"));
    const r = await runAgent(
      ["script", "test", bad],
      { ...env(), OUTPOST_AGENT_SCRIPT_TIMEOUT_MS: "500", OUTPOST_AGENT_SCRIPT_WARN_MS: "200" },
      {
        executable: [BINARY],
        cwd: tmp.dir,
      },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("script failed (timeout)");
  });

  test("register and poll --once against a fake server", async () => {
    const reg = await runAgent(["register", "--max-attempts", "1"], env(), {
      executable: [BINARY],
      cwd: tmp.dir,
    });
    expect(reg.code).toBe(0);
    const poll = await runAgent(["poll", "--once"], env(), { executable: [BINARY], cwd: tmp.dir });
    expect(poll.code).toBe(0);
    expect(seen).toEqual([
      "POST /api/v1/devices/register",
      `POST /api/v1/devices/${DEVICE_ID}/heartbeat`,
      `POST /api/v1/devices/${DEVICE_ID}/command_results`,
    ]);
  });
});
