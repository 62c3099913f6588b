import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import os from "node:os";
import { isUuid } from "../../platform/json-body";
import { ActionError, type ActionHttp, assert } from "./http";

/** What one journey's steps share: the device they drive and its credentials. */
export interface JourneyState {
  deviceId?: string;
  macAddress?: string;
  /** The device's own secret, as the agent keeps one: re-registering the MAC proves it is the same device. */
  deviceSecret?: string;
  apiToken?: string;
  claimedCommandIds: string[];
  payloadRef?: string;
}

export interface ActionContext {
  http: ActionHttp;
  /** Operator API token (OUTPOST_API_TOKEN) for actions that act as an operator. */
  operatorToken: string | undefined;
  state: JourneyState;
  /** Extra facts for the step's action_data in the log. */
  data: Record<string, unknown>;
}

export interface RunnerAction {
  expect: string;
  run(ctx: ActionContext): Promise<void>;
}

const JSONAPI = "application/vnd.api+json";
const POLL_BUDGET_MS = 5000;

/** A random locally administered unicast MAC, so E2E devices never collide with real ones. */
export function randomMac(): string {
  const bytes = randomBytes(6);
  bytes[0] = (bytes[0]! & 0xfc) | 0x02;
  return [...bytes].map((b) => b.toString(16).padStart(2, "0").toUpperCase()).join(":");
}

function operator(ctx: ActionContext, action: string): Record<string, string> {
  if (!ctx.operatorToken) {
    throw new ActionError(
      "PRECONDITION_FAILED",
      `${action} acts as an operator: set OUTPOST_API_TOKEN (operator role or above)`,
    );
  }
  return { authorization: `Bearer ${ctx.operatorToken}` };
}

function device(ctx: ActionContext, action: string): { id: string; key: string } {
  const { deviceId, apiToken } = ctx.state;
  if (!deviceId)
    throw new ActionError(
      "PRECONDITION_FAILED",
      `${action} needs a registered device (runtime_register_device first)`,
    );
  if (!apiToken)
    throw new ActionError(
      "PRECONDITION_FAILED",
      `${action} needs an approved device (runtime_approve_device first)`,
    );
  return { id: deviceId, key: encodeURIComponent(apiToken) };
}

async function register(ctx: ActionContext, productName: string) {
  ctx.state.macAddress ??= randomMac();
  ctx.state.deviceSecret ??= randomBytes(32).toString("hex");
  const response = await ctx.http.request("POST", "/api/v1/devices/register", {
    json: {
      mac_address: ctx.state.macAddress,
      device_secret: ctx.state.deviceSecret,
      product_name: productName,
      metadata: { source: "outpost-e2e" },
    },
    expect: [201],
  });
  const id = response.json?.data?.id;
  assert(isUuid(id), "registration answered without a device UUID in data.id", "uuid", id);
  ctx.state.deviceId = id;
  if (typeof response.json.data.api_token === "string") ctx.state.apiToken = response.json.data.api_token;
  ctx.data.device_id = id;
  return response.json.data as Record<string, unknown>;
}

async function heartbeat(ctx: ActionContext, scripts: Record<string, unknown>) {
  const { id, key } = device(ctx, "heartbeat");
  const response = await ctx.http.request("POST", `/api/v1/devices/${id}/heartbeat?api_key=${key}`, {
    json: {
      telemetry: {
        device: {
          hostname: os.hostname(),
          platform: os.platform(),
          arch: os.arch(),
          agent: "outpost-e2e-runner",
        },
        scripts,
        meta: { collected_at: new Date().toISOString(), source: "outpost-e2e" },
      },
      connection_status: { tunnel: "inactive" },
    },
    expect: [200],
  });
  const commands = response.json?.data?.commands;
  assert(Array.isArray(commands), "heartbeat reply has no data.commands list", "array", typeof commands);
  for (const command of commands)
    if (typeof command?.command_id === "string") ctx.state.claimedCommandIds.push(command.command_id);
  return commands as Record<string, unknown>[];
}

function readProc(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** The ten probes a Linux device typically reports, collected here as script outputs. */
function collectScripts(): Record<string, unknown> {
  const started = Date.now();
  const probe = (name: string, output: Record<string, unknown>) => [
    name,
    { data: { output }, duration_ms: Date.now() - started },
  ];
  const [load1, load5, load15] = os.loadavg();
  const total = os.totalmem();
  const free = os.freemem();
  const statLine = readProc("/proc/stat").split("\n")[0] ?? "";
  const mounts =
    readProc("/proc/mounts")
      .split("\n")
      .find((line) => line.split(" ")[1] === "/") ?? "";
  const route =
    readProc("/proc/net/route")
      .split("\n")
      .find((line) => line.split("\t")[1] === "00000000") ?? "";
  return Object.fromEntries([
    probe("kernel_info", { release: os.release(), type: os.type() }),
    probe("cpu_count", { cpus: os.cpus().length }),
    probe("loadavg_linux", { load1, load5, load15 }),
    probe("mem_linux", {
      total_bytes: total,
      free_bytes: free,
      memory_used_percent: Math.round(((total - free) / total) * 1000) / 10,
    }),
    probe("disk_root", { root_usage_percent: null, mounted: mounts !== "" }),
    probe("net_default_route", { interface: route.split("\t")[0] || null }),
    probe("uptime_linux", { uptime_s: Math.round(os.uptime()) }),
    probe("top_process_cpu", { pid: process.pid, cpu_user_us: process.cpuUsage().user }),
    probe("filesystem_type", { root: mounts.split(" ")[2] ?? null }),
    probe("proc_stat_snapshot", { cpu: statLine.split(/\s+/).slice(1, 8).map(Number) }),
  ]);
}

/** Every action the runner implements, with the one expect token each allows (the server's registry). */
export const RUNNER_ACTIONS: Record<string, RunnerAction> = {
  register_device: {
    expect: "uuid_returned",
    async run(ctx) {
      await register(ctx, "E2E Device");
    },
  },
  fetch_dashboard: {
    expect: "dashboard_payload",
    async run(ctx) {
      if (ctx.operatorToken) {
        const response = await ctx.http.request("GET", "/api/v1/devices?limit=5", {
          headers: operator(ctx, "fetch_dashboard"),
          expect: [200],
        });
        assert(
          Array.isArray(response.json?.data),
          "GET /api/v1/devices answered without a data list",
          "array",
          typeof response.json?.data,
        );
        ctx.data.devices_listed = response.json.data.length;
      } else {
        const response = await ctx.http.request("GET", "/readyz", { expect: [200] });
        assert(response.json?.status === "ready", "Outpost is not ready", "ready", response.json?.status);
      }
    },
  },
  runtime_register_device: {
    expect: "runtime_device_registered",
    async run(ctx) {
      const data = await register(ctx, "E2E Runtime Device");
      if (data.approval_status !== undefined) ctx.data.approval_status = data.approval_status;
      assert(
        data.approval_status !== "approved" || typeof data.api_token === "string",
        "an approved device got no api_token",
      );
    },
  },
  runtime_approve_device: {
    expect: "device_approved",
    async run(ctx) {
      const id = ctx.state.deviceId;
      if (!id)
        throw new ActionError(
          "PRECONDITION_FAILED",
          "runtime_approve_device needs runtime_register_device first",
        );
      const response = await ctx.http.request("PATCH", `/api/json/devices/${id}`, {
        json: { data: { type: "device", id, attributes: { approval_status: "approved" } } },
        headers: { ...operator(ctx, "runtime_approve_device"), "content-type": JSONAPI, accept: JSONAPI },
        expect: [200],
      });
      const status = response.json?.data?.attributes?.approval_status;
      assert(status === "approved", "the device is not approved after PATCH", "approved", status);
      // The token is issued to an approved device at its next registration.
      const data = await register(ctx, "E2E Runtime Device");
      assert(
        typeof data.api_token === "string" && data.api_token.length > 0,
        "re-registration of the approved device issued no api_token",
      );
    },
  },
  runtime_queue_payload_ref_command: {
    expect: "command_payload_available",
    async run(ctx) {
      const { id, key } = device(ctx, "runtime_queue_payload_ref_command");
      // A script the agent would install (Outpost refuses others when they are queued), padded past
      // the inline payload limit so it is delivered by reference.
      const script = `/*---\nname: e2e_payload_ref\nschema:\n  type: object\n---*/\nfunction main() { return {}; }\n${"// outpost e2e payload filler\n".repeat(200)}`;
      const queued = await ctx.http.request("POST", "/api/json/pending_commands", {
        json: {
          data: {
            type: "pending_command",
            attributes: {
              type: "install_script",
              payload: { content_type: "text/javascript", name: "e2e_payload_ref", data: script },
            },
            relationships: { device: { data: { type: "device", id } } },
          },
        },
        headers: {
          ...operator(ctx, "runtime_queue_payload_ref_command"),
          "content-type": JSONAPI,
          accept: JSONAPI,
        },
        expect: [201],
      });
      ctx.data.command_id = queued.json?.data?.id;
      const commands = await heartbeat(ctx, {});
      const delivered = commands.find(
        (c) => c.type === "install_script" && typeof c.payload_ref === "string",
      );
      assert(
        delivered,
        "the heartbeat did not deliver the install_script command by payload_ref",
        "payload_ref",
        commands.length,
      );
      assert(delivered.payload === undefined, "a deferred command carried its payload inline");
      ctx.state.payloadRef = delivered.payload_ref as string;
      const payload = await ctx.http.request(
        "GET",
        `/api/v1/devices/${id}/command_payloads/${encodeURIComponent(ctx.state.payloadRef)}?api_key=${key}`,
        {
          expect: [200],
        },
      );
      assert(
        payload.text.includes("e2e_payload_ref") || payload.text.includes("outpost e2e payload"),
        "the fetched payload is not the queued script",
      );
    },
  },
  runtime_expect_missing_payload_ref: {
    expect: "command_payload_missing",
    async run(ctx) {
      const { id, key } = device(ctx, "runtime_expect_missing_payload_ref");
      const ref = `missing-${randomBytes(8).toString("hex")}`;
      await ctx.http.request("GET", `/api/v1/devices/${id}/command_payloads/${ref}?api_key=${key}`, {
        expect: [404],
      });
    },
  },
  runtime_reject_invalid_command_results: {
    expect: "command_results_rejected",
    async run(ctx) {
      const { id, key } = device(ctx, "runtime_reject_invalid_command_results");
      await ctx.http.request("POST", `/api/v1/devices/${id}/command_results?api_key=${key}`, {
        json: { results: { invalid: "shape" } },
        expect: [400],
      });
    },
  },
  runtime_poll_with_scripts: {
    expect: "scripts_polled_under_budget",
    async run(ctx) {
      const { id, key } = device(ctx, "runtime_poll_with_scripts");
      const started = Date.now();
      const scripts = collectScripts();
      await heartbeat(ctx, scripts);
      const pending = [...new Set(ctx.state.claimedCommandIds)];
      if (pending.length > 0) {
        await ctx.http.request("POST", `/api/v1/devices/${id}/command_results?api_key=${key}`, {
          json: {
            results: pending.map((command_id) => ({
              command_id,
              status: "OK",
              output: "handled by the E2E runner",
            })),
          },
          expect: [200, 202],
        });
        ctx.state.claimedCommandIds = [];
      }
      const elapsed = Date.now() - started;
      ctx.data.scripts = Object.keys(scripts).length;
      ctx.data.poll_ms = elapsed;
      assert(
        elapsed <= POLL_BUDGET_MS,
        `polling took ${elapsed} ms, over the ${POLL_BUDGET_MS} ms budget`,
        POLL_BUDGET_MS,
        elapsed,
      );
    },
  },
  runtime_verify_telemetry: {
    expect: "telemetry_persisted",
    async run(ctx) {
      const id = ctx.state.deviceId;
      if (!id)
        throw new ActionError("PRECONDITION_FAILED", "runtime_verify_telemetry needs a registered device");
      const response = await ctx.http.request(
        "GET",
        `/api/json/telemetry_events?filter[device_id]=${id}&page[size]=10`,
        {
          headers: { ...operator(ctx, "runtime_verify_telemetry"), accept: JSONAPI },
          expect: [200],
        },
      );
      const events = response.json?.data;
      assert(
        Array.isArray(events) && events.length > 0,
        "no telemetry event was stored for the device",
        ">= 1",
        events?.length ?? 0,
      );
      ctx.data.telemetry_events = events.length;
    },
  },
  runtime_cleanup: {
    expect: "runtime_resources_cleaned",
    async run(ctx) {
      const id = ctx.state.deviceId;
      if (!id) {
        ctx.data.note = "nothing to clean";
        return;
      }
      await ctx.http.request("DELETE", `/api/json/devices/${id}`, {
        headers: { ...operator(ctx, "runtime_cleanup"), accept: JSONAPI },
        expect: [200, 204],
      });
      ctx.state.deviceId = undefined;
      ctx.state.apiToken = undefined;
    },
  },
  harness_step: {
    expect: "harness_reported",
    async run() {
      // Real agents, sshd, Caddy and Chromium are the harness's, not this HTTP-only runner's.
      throw new ActionError(
        "PRECONDITION_FAILED",
        "this step is run by its own harness (the system suite: npm run test:system), which reports it through the run API",
      );
    },
  },
};
