import { expect } from "bun:test";
import fs, { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, BrowserContext } from "playwright-core";
import YAML from "yaml";
import { LIVE_CHANNEL } from "../../modules/live/hub";
import type { OperatorRole } from "../../modules/operators/service";
import { SESSION_COOKIE } from "../../modules/platform/access";
import { AGENT_MAIN, BUN } from "../agent/helpers";
import { deviceSecret } from "../devices/helpers";
import { builtinScript, ScriptedAgent } from "../helpers/agent-telemetry";
import type { TestApp } from "../helpers/app";
import { LAPTOP } from "../helpers/browser";

let counter = Math.floor(Math.random() * 0xffff);

/** A fresh MAC address (locally administered range). */
export function mac(): string {
  counter = (counter + 1) & 0xffffff;
  const hex = `06C0${counter.toString(16).padStart(6, "0")}${Math.floor(Math.random() * 256)
    .toString(16)
    .padStart(2, "0")}`.toUpperCase();
  return hex.match(/../g)!.join(":");
}

function post(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  };
}

/** Registers a device through the real device API; returns its id (and token when approved). */
export async function registerDevice(app: TestApp, body: Record<string, unknown> = {}) {
  const response = await app.fetch("/api/v1/devices/register", post({ mac_address: mac(), ...body }));
  if (response.status !== 201)
    throw new Error(`register answered ${response.status}: ${await response.text()}`);
  const data = ((await response.json()) as { data: { id: string; mac_address: string; api_token?: string } })
    .data;
  return { id: data.id, mac: data.mac_address, token: data.api_token };
}

/** Approves devices through the operator API (POST /api/v1/devices/approval). */
export async function approve(app: TestApp, ids: string[]) {
  const token = await app.token("operator");
  const response = await app.fetch(
    "/api/v1/devices/approval",
    post({ ids, approval_status: "approved" }, { authorization: `Bearer ${token}` }),
  );
  if (response.status !== 200) throw new Error(`approval answered ${response.status}`);
}

/** A registered and approved device with its API token (registration repeated, as the agent does). */
export async function approvedDevice(app: TestApp, body: Record<string, unknown> = {}) {
  const proof = { device_secret: deviceSecret(), ...body }; // as the agent proves its identity
  const first = await registerDevice(app, proof);
  await approve(app, [first.id]);
  const again = await registerDevice(app, { ...proof, mac_address: first.mac });
  if (!again.token) throw new Error("approved device got no token");
  return { id: first.id, mac: first.mac, token: again.token };
}

/** The agent's built-in scripts the console draws its gauges from, as the agent declares them. */
const GAUGE_SCRIPTS = ["cpu", "memory", "disk", "load"].map(builtinScript);

/**
 * The heartbeat the agent builds when its built-in cpu, memory, disk and load scripts report these
 * figures (tests/helpers/agent-telemetry.ts: the agent's sandbox runs scripts with the built-ins'
 * schemas, its heartbeat builder assembles the body).
 */
export async function agentHeartbeat(values: { cpu: number; memory: number; disk: number; load?: number }) {
  const dir = mkdtempSync(path.join(tmpdir(), "outpost-console-agent-"));
  try {
    const agent = new ScriptedAgent(dir, "console", GAUGE_SCRIPTS);
    return await agent.heartbeat(crypto.randomUUID(), {
      cpu: { usage_pct: values.cpu, cores: 4 },
      memory: {
        used_pct: values.memory,
        total_bytes: 8e9,
        available_bytes: Math.round(((100 - values.memory) / 100) * 8e9),
        used_bytes: Math.round((values.memory / 100) * 8e9),
      },
      disk: { root_used_pct: values.disk, max_used_pct: values.disk, mounts: [] },
      load: { load_1m: values.load ?? 0.5, load_5m: 0.4, load_15m: 0.3 },
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function heartbeat(app: TestApp, device: { id: string; token: string }, body: unknown) {
  const response = await app.fetch(
    `/api/v1/devices/${device.id}/heartbeat?api_key=${device.token}`,
    post(body),
  );
  if (response.status !== 200)
    throw new Error(`heartbeat answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { data: { commands: { command_id: string; type: string }[] } }).data;
}

export async function postResults(app: TestApp, device: { id: string; token: string }, results: unknown[]) {
  const response = await app.fetch(
    `/api/v1/devices/${device.id}/command_results?api_key=${device.token}`,
    post({ results }),
  );
  if (response.status !== 202)
    throw new Error(`command_results answered ${response.status}: ${await response.text()}`);
}

/** A browser context signed in as a new operator of `role`. */
export async function signedIn(
  browser: Browser,
  app: TestApp,
  role: OperatorRole,
  viewport = LAPTOP,
): Promise<BrowserContext> {
  const session = await app.session(role);
  const context = await browser.newContext({ viewport });
  const value = session.cookie.slice(SESSION_COOKIE.length + 1);
  await context.addCookies([{ name: SESSION_COOKIE, value, url: app.url }]);
  return context;
}

/** The live-update notifications PostgreSQL sent while `run` ran (and 300 ms after). */
export async function notificationsDuring(app: TestApp, run: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const listener = await app.database.sql.listen(LIVE_CHANNEL, (payload) => seen.push(payload));
  try {
    await run();
    await Bun.sleep(300);
  } finally {
    await listener.unlisten();
  }
  return seen;
}

/**
 * One real agent poll (agent/main.ts as a subprocess) as `identity` (the state `register` would have
 * stored), its state and config in `dir`; `settings`: more keys of its config file.
 */
export async function agentPollAs(
  app: TestApp,
  dir: string,
  identity: { id: string; token: string },
  settings: Record<string, unknown> = {},
) {
  const stateDir = path.join(dir, "state");
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(
    path.join(stateDir, "identity.json"),
    `${JSON.stringify({ uuid: identity.id, token: identity.token })}\n`,
    { mode: 0o600 },
  );
  const configFile = path.join(dir, "agent.yaml");
  fs.writeFileSync(
    configFile,
    YAML.stringify({
      server_url: app.url,
      state_dir: stateDir,
      authorized_keys_path: path.join(dir, "ssh", "authorized_keys"),
      log_level: "warn",
      ...settings,
    }),
  );
  const child = Bun.spawn([BUN, AGENT_MAIN, "poll", "--once"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, OUTPOST_AGENT_CONFIG: configFile },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  clearTimeout(timer);
  expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
}
