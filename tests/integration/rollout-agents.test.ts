// A two-wave install rollout received by real agents (the agent's own daemon, from source, polling
// the app): one device's install fails on purpose (it has a newer version of the script, which the
// agent refuses to downgrade), the canary wave passes the failure threshold and the rollout pauses;
// resumed, the second wave is installed and the rollout completes. And a script run once by a rollout:
// the output of each agent is its device's result, an agent whose config forbids it fails. The app runs its worker.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import path from "node:path";
import { ScriptStore } from "../../agent/scripts/store";
import { saveCredentials } from "../../agent/state";
import { scriptText, tempDir } from "../agent/helpers";
import { approvedDevice, json } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { spawnAgent } from "../helpers/process";
import { waitFor } from "../remote-access/helpers";

const app = await startTestApp();
const operator = await app.token("operator");
const tmp = tempDir();
const agents: ReturnType<typeof spawnAgent>[] = [];
afterAll(async () => {
  for (const agent of agents) await agent.stop();
  tmp.cleanup();
  await app.stop();
});

const api = async (method: string, url: string, body?: unknown) => {
  const headers = { authorization: `Bearer ${operator}`, "content-type": "application/json" };
  const response = await app.fetch(
    url,
    method === "GET" ? { headers } : { ...json(body ?? {}, method), headers },
  );
  return {
    status: response.status,
    body: (await response.json()) as {
      data: { id: string; status: string; pause_reason: string | null; counts: Record<string, number> };
    },
  };
};

async function agentDevice(name: string, config: Record<string, string> = {}) {
  const device = await approvedDevice(app, { metadata: { name } });
  const state = path.join(tmp.dir, device.id);
  saveCredentials(state, { uuid: device.id, token: device.token });
  const agent = spawnAgent({
    server_url: app.url,
    state_dir: state,
    authorized_keys_path: path.join(state, "ssh", "authorized_keys"),
    install_builtin_scripts: "false",
    poll_interval_s: "2",
    log_level: "error",
    ...config,
  });
  agents.push(agent);
  return { id: device.id, scripts: path.join(state, "scripts") };
}

describe("a rollout received by real agents", () => {
  test("two waves; one install fails, the rollout pauses at the threshold; resume completes it", async () => {
    const devices = await Promise.all(["canary-ok", "canary-bad", "rest"].map((name) => agentDevice(name)));
    // The failing device already runs v5 of the script: the agent refuses v1 (no downgrade without force).
    new ScriptStore(devices[1]!.scripts).install(
      scriptText("fleetprobe", 5, "function main() { return {}; }"),
    );
    const created = await api("POST", "/api/v1/rollouts", {
      action: {
        type: "install_script",
        script: scriptText("fleetprobe", 1, "function main() { return {}; }"),
      },
      target: { ids: devices.map((d) => d.id) },
      canary_count: 2,
      failure_threshold: 25,
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    const rollout = async () => (await api("GET", `/api/v1/rollouts/${id}`)).body.data;

    await waitFor(async () => (await rollout()).status === "paused", 60_000, "the threshold's pause");
    expect(await rollout()).toMatchObject({
      pause_reason: "threshold",
      counts: { succeeded: 1, failed: 1, queued: 1 },
    });
    const failed = await app.fetch(`/api/v1/rollouts/${id}/results?state=failed`, {
      headers: { authorization: `Bearer ${operator}` },
    });
    const [failure] = ((await failed.json()) as { data: { device_id: string; error: string }[] }).data;
    expect(failure).toMatchObject({ device_id: devices[1]!.id });
    expect(failure!.error).toContain("version must be greater than v5");
    // The second wave waits while paused.
    expect(existsSync(path.join(devices[2]!.scripts, "fleetprobe@v1.js"))).toBe(false);

    expect((await api("POST", `/api/v1/rollouts/${id}/resume`)).status).toBe(200);
    await waitFor(async () => (await rollout()).status === "completed", 60_000, "the rollout's end");
    expect((await rollout()).counts).toMatchObject({ succeeded: 2, failed: 1, skipped: 0 });
    for (const device of [devices[0]!, devices[2]!])
      expect(new ScriptStore(device.scripts).list().map((s) => `${s.meta.name} v${s.meta.version}`)).toEqual([
        "fleetprobe v1",
      ]);
  }, 150_000);

  test("run a script once: each device's output is its result; an agent whose config forbids it fails, saying why", async () => {
    const [allowed, refusing] = await Promise.all([
      agentDevice("run-allowed", { run_script_enabled: "true" }),
      agentDevice("run-refusing"),
    ]);
    const created = await api("POST", "/api/v1/rollouts", {
      action: { type: "run_script", name: "greeting", script: "console.log('hello from ' + 'a rollout');" },
      target: { ids: [allowed.id, refusing.id] },
      canary_count: 0,
      failure_threshold: 100,
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    await waitFor(
      async () => (await api("GET", `/api/v1/rollouts/${id}`)).body.data.status === "completed",
      60_000,
      "the rollout's end",
    );
    const response = await app.fetch(`/api/v1/rollouts/${id}/results`, {
      headers: { authorization: `Bearer ${operator}` },
    });
    const results = (
      (await response.json()) as {
        data: { device_id: string; state: string; error: string | null; output: unknown }[];
      }
    ).data;
    const of = (deviceId: string) => results.find((r) => r.device_id === deviceId);
    expect(of(allowed.id)).toMatchObject({
      state: "succeeded",
      output: { exit_code: 0, stdout: "hello from a rollout\n", stderr: "" },
    });
    expect(of(refusing.id)).toMatchObject({ state: "failed" });
    expect(of(refusing.id)!.error).toContain("run_script is disabled by this agent's config");
  }, 150_000);
});
