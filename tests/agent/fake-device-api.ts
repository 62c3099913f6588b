/**
 * A fake device API (Bun.serve) for tests that run the agent as a subprocess: it records every request
 * and answers as the test sets it (`api.registerMode`, `api.heartbeatReplies`, …). The real server's
 * full-loop test lives with the server.
 */
import fs from "node:fs";
import path from "node:path";
import { scriptText, tempDir } from "./helpers.ts";

export const DEVICE_ID = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
export const TOKEN = "tok_abc-123";
export const BUILTINS = ["cpu", "disk", "load", "memory", "network", "uptime"];
export const HOST_KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ root@device";
export const deferredScript = scriptText("deferred", 2, "function main() { return { deferred: true }; }");

// biome-ignore lint/suspicious/noExplicitAny: request bodies are free-form JSON
export type Json = any;

export interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  body: Json;
  at: number;
}

/** What the fake API answers; tests change it and put it back. */
export interface FakeApiState {
  requests: Recorded[];
  registerCalls: number;
  /** Registration: approved with `validToken` from the second call (normal), or always this answer. */
  registerMode: "normal" | "reject" | "pending" | "rejected";
  validToken: string;
  /** Replies to the next heartbeats, in order; then `{data: {commands: []}}`. */
  heartbeatReplies: unknown[];
  heartbeatStatus: number;
  heartbeatDelayMs: number;
  /** command_results with an empty command_id → 422. */
  rejectEmptyIds: boolean;
}

export interface FakeDeviceApi {
  api: FakeApiState;
  /** The server's address. */
  url: string;
  /** The test's temporary directory (state, ssh, home). */
  dir: string;
  /** The agent's environment against this API, rooted in `dir`. */
  env(extra?: Record<string, string>): Record<string, string>;
  /** The recorded requests to `pathname`. */
  take(pathname: string): Recorded[];
  stop(): void;
}

const json = (body: unknown, status = 200) => Response.json(body, { status });

export function startFakeDeviceApi(): FakeDeviceApi {
  const tmp = tempDir("outpost-http-");
  fs.writeFileSync(path.join(tmp.dir, "ssh_host_ed25519_key.pub"), `${HOST_KEY}\n`);
  const api: FakeApiState = {
    requests: [],
    registerCalls: 0,
    registerMode: "normal",
    validToken: TOKEN,
    heartbeatReplies: [],
    heartbeatStatus: 200,
    heartbeatDelayMs: 0,
    rejectEmptyIds: false,
  };
  const device = `/api/v1/devices/${DEVICE_ID}`;
  const server = Bun.serve({
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
      api.requests.push(rec);
      if (url.pathname === "/api/v1/devices/register") {
        api.registerCalls++;
        if (api.registerMode === "reject")
          return json({ error: { code: "invalid_request", message: "mac_address is invalid" } }, 400);
        if (api.registerMode === "pending" || api.registerMode === "rejected")
          return json({ data: { id: DEVICE_ID, approval_status: api.registerMode } }, 201);
        const data: Record<string, unknown> = {
          id: DEVICE_ID,
          mac_address: rec.body.mac_address.toUpperCase(),
          approval_status: "pending",
        };
        if (api.registerCalls >= 2)
          Object.assign(data, { approval_status: "approved", api_token: api.validToken });
        return json({ data }, 201);
      }
      if (url.searchParams.get("api_key") !== api.validToken)
        return json({ error: { code: "invalid_api_key", message: "API key is invalid" } }, 401);
      if (url.pathname === `${device}/heartbeat`) {
        if (api.heartbeatDelayMs) await Bun.sleep(api.heartbeatDelayMs);
        if (api.heartbeatStatus !== 200)
          return json({ error: { code: "boom", message: "down" } }, api.heartbeatStatus);
        return json(api.heartbeatReplies.shift() ?? { data: { commands: [] } });
      }
      if (url.pathname === `${device}/command_payloads/ref-deferred`) {
        // like the Outpost server: the payload object itself, no envelope
        return json({ content_type: "application/javascript", name: "deferred", data: deferredScript });
      }
      if (url.pathname.startsWith(`${device}/command_payloads/`))
        return json({ error: { code: "payload_not_found", message: "Command payload not found" } }, 404);
      if (url.pathname === `${device}/command_results`) {
        const results = rec.body?.results as { command_id: string }[];
        if (api.rejectEmptyIds && results.some((r) => !r.command_id))
          return json({ error: { code: "invalid_results", message: "command_id required" } }, 422);
        return json({ data: { acknowledged_count: results.length } }, 202);
      }
      return json({ error: { code: "not_found", message: "no route" } }, 404);
    },
  });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    api,
    url,
    dir: tmp.dir,
    env: (extra = {}) => ({
      HOME: path.join(tmp.dir, "home"),
      OUTPOST_AGENT_SERVER_URL: url,
      OUTPOST_AGENT_STATE_DIR: path.join(tmp.dir, "state"),
      OUTPOST_AGENT_AUTHORIZED_KEYS_PATH: path.join(tmp.dir, "ssh", "authorized_keys"),
      OUTPOST_AGENT_REGISTER_RETRY_BASE_MS: "20",
      OUTPOST_AGENT_REGISTER_PENDING_POLL_S: "0.02",
      OUTPOST_AGENT_PRODUCT_NAME: "test-gateway",
      OUTPOST_AGENT_LOG_LEVEL: "warn",
      // The sshd host key the heartbeat reports (for the terminal's pinning): a file of this test.
      OUTPOST_AGENT_SSH_HOST_KEY_PATH: path.join(tmp.dir, "ssh_host_ed25519_key.pub"),
      ...extra,
    }),
    take: (pathname) => api.requests.filter((r) => r.path === pathname),
    stop: () => {
      server.stop(true);
      tmp.cleanup();
    },
  };
}
