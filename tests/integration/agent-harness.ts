// The real agent (from source, as a subprocess) against a test app: its config in a temp directory,
// one `poll --once` at a time, and the operator's JSON:API calls that drive it (approve, queue commands).
import { expect } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { AGENT_MAIN, BUN, tempDir } from "../agent/helpers";
import type { TestApp } from "../helpers/app";

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

/**
 * `serverUrl`: where the agent sends its requests (default the app itself; a proxy in front of it);
 * `settings`: more keys of the agent's config file.
 */
export async function agentHarness(
  app: TestApp,
  product: string,
  serverUrl = app.url,
  settings: Record<string, unknown> = {},
) {
  const operator = await app.token("operator");
  const work = tempDir("outpost-agent-loop-");
  const configFile = path.join(work.dir, "agent.yaml");
  fs.writeFileSync(
    configFile,
    YAML.stringify({
      server_url: serverUrl,
      product_name: product,
      state_dir: path.join(work.dir, "state"),
      poll_interval_s: 1,
      register_retry_base_ms: 100,
      register_retry_max_s: 1,
      authorized_keys_path: path.join(work.dir, "ssh", "authorized_keys"),
      log_level: "warn",
      ...settings,
    }),
  );
  const started: ReturnType<typeof Bun.spawn>[] = [];

  function agent(args: string[]) {
    const child = Bun.spawn([BUN, AGENT_MAIN, ...args], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: work.dir, OUTPOST_AGENT_CONFIG: configFile },
      stdout: "pipe",
      stderr: "pipe",
      stdin: "ignore",
    });
    started.push(child);
    return child;
  }

  async function api(method: string, pathname: string, body?: unknown) {
    const response = await app.fetch(pathname, {
      method,
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/vnd.api+json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (response.status === 204 ? undefined : await response.json()) as Json,
    };
  }

  async function queue(deviceId: string, attributes: Record<string, unknown>) {
    const created = await api("POST", "/api/json/pending_commands", {
      data: { type: "pending_command", attributes: { ...attributes, device_id: deviceId } },
    });
    expect({ status: created.status, body: created.status === 201 ? "" : created.body }).toEqual({
      status: 201,
      body: "",
    });
    return created.body.data.id as string;
  }

  return {
    work,
    agent,
    api,
    queue,
    async pollOnce() {
      const child = agent(["poll", "--once"]);
      const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
      expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
    },
    async commandStatus(id: string) {
      return (await api("GET", `/api/json/pending_commands/${id}`)).body.data.attributes;
    },
    /** The script reports of the device's latest heartbeat. */
    async latestScripts(deviceId: string): Promise<Record<string, { data: Record<string, unknown> }>> {
      const [row] = await app.database.sql<{ payload: string }[]>`
        select payload::text as payload from telemetry_events where device_id = ${deviceId}::uuid
        order by recorded_at desc limit 1`;
      return JSON.parse(row!.payload).scripts;
    },
    /** Registers the agent (in the background) and approves it as an operator; resolves once it is. */
    async registerApproved(): Promise<{ id: string }> {
      const registering = agent(["register"]);
      const device = await waitFor(async () => {
        const [row] = await app.database.sql<{ id: string; approval_status: string }[]>`
          select id::text, approval_status from devices where product_name = ${product}`;
        return row;
      });
      expect(device.approval_status).toBe("pending");
      const approved = await api("PATCH", `/api/json/devices/${device.id}`, {
        data: { type: "device", id: device.id, attributes: { approval_status: "approved" } },
      });
      expect(approved.status).toBe(200);
      expect(await registering.exited).toBe(0);
      return { id: device.id };
    },
    cleanup() {
      for (const child of started) if (child.exitCode === null) child.kill("SIGKILL");
      work.cleanup();
    },
  };
}

/** Polls `read` every 100 ms until it returns a value (bounded: `timeoutMs`). */
export async function waitFor<T>(read: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await read();
    if (value !== undefined) return value;
    await Bun.sleep(100);
  }
  throw new Error("timed out");
}
