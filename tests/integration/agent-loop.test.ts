import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { AGENT_MAIN, BUN, scriptText, tempDir } from "../agent/helpers";
import { startTestApp } from "../helpers/app";

// The whole loop of issue 4 against the real server: the agent (from source, as a subprocess)
// registers, waits for approval, polls with its built-in scripts, installs a script the server
// queues, reports its output in the next heartbeat, and removes it again.
const app = await startTestApp();
const operator = await app.token("operator");
const work = tempDir("outpost-agent-loop-");
const configFile = path.join(work.dir, "agent.yaml");
fs.writeFileSync(
  configFile,
  YAML.stringify({
    server_url: app.url,
    product_name: "loop-test",
    state_dir: path.join(work.dir, "state"),
    poll_interval_s: 1,
    register_retry_base_ms: 100,
    register_retry_max_s: 1,
    authorized_keys_path: path.join(work.dir, "ssh", "authorized_keys"),
    log_level: "warn",
  }),
);

const started: ReturnType<typeof Bun.spawn>[] = [];
afterAll(() => {
  for (const child of started) if (child.exitCode === null) child.kill("SIGKILL");
  work.cleanup();
});

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

async function pollOnce() {
  const child = agent(["poll", "--once"]);
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
}

async function api(method: string, pathname: string, body?: unknown) {
  const response = await app.fetch(pathname, {
    method,
    headers: { authorization: `Bearer ${operator}`, "content-type": "application/vnd.api+json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: response.status === 204 ? undefined : await response.json() };
}

async function waitFor<T>(read: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await read();
    if (value !== undefined) return value;
    await Bun.sleep(100);
  }
  throw new Error("timed out");
}

async function latestScripts(deviceId: string): Promise<Record<string, { data: Record<string, unknown> }>> {
  const [row] = await app.database.sql<{ payload: string }[]>`
    select payload::text as payload from telemetry_events where device_id = ${deviceId}::uuid
    order by recorded_at desc limit 1`;
  return JSON.parse(row!.payload).scripts;
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

async function commandStatus(id: string) {
  return (await api("GET", `/api/json/pending_commands/${id}`)).body.data.attributes;
}

describe("agent ↔ server loop", () => {
  test("register → approve → poll → install_script → output reported → remove_script", async () => {
    const registering = agent(["register"]);
    const device = await waitFor(async () => {
      const [row] = await app.database.sql<{ id: string; approval_status: string }[]>`
        select id::text, approval_status from devices where product_name = 'loop-test'`;
      return row;
    });
    expect(device.approval_status).toBe("pending");

    const approved = await api("PATCH", `/api/json/devices/${device.id}`, {
      data: { type: "device", id: device.id, attributes: { approval_status: "approved" } },
    });
    expect(approved.status).toBe(200);
    expect(await registering.exited).toBe(0);
    const identity = JSON.parse(fs.readFileSync(path.join(work.dir, "state", "identity.json"), "utf8"));
    expect(identity.uuid).toBe(device.id);
    expect(fs.statSync(path.join(work.dir, "state", "identity.json")).mode & 0o777).toBe(0o600);

    await pollOnce();
    const builtins = await latestScripts(device.id);
    for (const name of ["load", "cpu", "memory", "disk", "uptime", "network"]) {
      expect({ name, status: builtins[name]?.data.status }).toEqual({ name, status: "success" });
    }

    const script = scriptText(
      "greeting",
      1,
      'function main() { return { text: "hello from the sandbox", answer: 42 }; }',
      "type: object\nproperties:\n  text: {type: string}\n  answer: {type: integer}\nrequired: [text, answer]",
    );
    const install = await queue(device.id, {
      type: "install_script",
      payload: { name: "greeting", data: script },
    });
    await pollOnce(); // delivers and executes install_script, posts its result
    const installed = await commandStatus(install);
    expect(installed.status).toBe("succeeded");

    await pollOnce(); // the next heartbeat carries the new script's output
    const withGreeting = await latestScripts(device.id);
    expect(withGreeting.greeting?.data.status).toBe("success");
    expect(withGreeting.greeting?.data.output).toEqual({ text: "hello from the sandbox", answer: 42 });

    const remove = await queue(device.id, { type: "remove_script", args: ["greeting"] });
    await pollOnce();
    expect((await commandStatus(remove)).status).toBe("succeeded");
    await pollOnce();
    expect((await latestScripts(device.id)).greeting).toBeUndefined();
  });

  test("a script returning a 20 KB string does not block heartbeats: the server accepts one with an error report", async () => {
    // runs after the loop above: the device is registered and approved
    const identity = JSON.parse(fs.readFileSync(path.join(work.dir, "state", "identity.json"), "utf8"));
    const file = path.join(work.dir, "huge.js");
    fs.writeFileSync(
      file,
      scriptText("huge", 1, 'function main() { return { blob: "x".repeat(20000) }; }', "type: object"),
    );
    const install = agent(["script", "install", file]);
    expect(await install.exited).toBe(0);
    const [before] = await app.database.sql<{ n: number }[]>`
      select count(*)::int as n from telemetry_events where device_id = ${identity.uuid}::uuid`;
    await pollOnce(); // exit 0: the heartbeat was accepted (it used to be refused with 422)
    const [after] = await app.database.sql<{ n: number }[]>`
      select count(*)::int as n from telemetry_events where device_id = ${identity.uuid}::uuid`;
    expect(after.n).toBe(before.n + 1);
    const scripts = await latestScripts(identity.uuid);
    expect(scripts.huge?.data).toMatchObject({
      status: "error",
      error: {
        type: "execution",
        message: "output exceeds telemetry limits: output.blob has a string longer than 16384 bytes",
      },
    });
    expect(scripts.huge?.data.output).toBeUndefined();
    expect(scripts.load?.data.status).toBe("success");
  });
});
