import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import mqtt from "mqtt";
import { createBuiltins } from "../../agent/builtins/index.ts";
import { topicMatches } from "../../agent/builtins/mqtt.ts";
import { runScript } from "../../agent/scripts/runner.ts";
import { parseScript } from "../../shared/scripts/frontmatter.ts";
import { type ListeningProcess, startListening } from "../helpers/listener.ts";
import { scriptText, tempDir, testConfig, waitForFile } from "./helpers.ts";

const MOSQUITTO = "/usr/sbin/mosquitto";
const tmp = tempDir("outpost-mqtt-");
let broker: ListeningProcess | null = null;
let responder: mqtt.MqttClient | null = null;
let url = "";

beforeAll(async () => {
  if (!(await waitForFile(MOSQUITTO))) throw new Error(`${MOSQUITTO} is not installed`);
  const cfg = path.join(tmp.dir, "mosquitto.conf");
  broker = await startListening({
    command: (port) => {
      fs.writeFileSync(
        cfg,
        `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n`,
      );
      return [MOSQUITTO, "-c", cfg];
    },
    // Printed once every listener is bound ("Opening … socket on port" comes before the bind).
    ready: () => " running",
  });
  url = `mqtt://127.0.0.1:${broker.port}`;
  // A device-side responder: answers requests on sensors/<id>/get on sensors/<id>/state, first with a
  // non-matching reply, then with the real one.
  responder = await mqtt.connectAsync(url, { clientId: "responder", reconnectPeriod: 0 });
  await responder.subscribeAsync("sensors/+/get");
  await responder.subscribeAsync("echo/topic");
  responder.on("message", (topic, payload) => {
    const id = topic.split("/")[1];
    if (topic === "echo/topic") {
      if (payload.toString() === "ping") setTimeout(() => responder?.publish("echo/topic", "pong"), 20);
      return;
    }
    const req = JSON.parse(payload.toString()) as { want: number };
    responder?.publish(`sensors/${id}/state`, JSON.stringify({ seq: 0, temp: -1 }));
    setTimeout(
      () => responder?.publish(`sensors/${id}/state`, JSON.stringify({ seq: req.want, temp: 21.5 })),
      30,
    );
  });
});

afterAll(async () => {
  await responder?.endAsync(true);
  await broker?.stop();
  tmp.cleanup();
});

function run(
  body: string,
  publish = ["sensors/+/get", "echo/topic", "nobody/listens"],
  subscribe = ["sensors/#", "echo/topic", "nobody/listens"],
) {
  const config = testConfig(tmp.dir, { script_timeout_ms: 4000, script_warn_ms: 3000 });
  config.mqtt = {
    ...config.mqtt,
    url,
    publish_allowlist: publish,
    subscribe_allowlist: subscribe,
    timeout_ms: 1000,
  };
  return runScript(parseScript(scriptText("mq", 1, body)), {
    timeoutMs: 4000,
    warnMs: 3000,
    memoryMb: 32,
    builtins: createBuiltins(config, "mq"),
  }).then((r) => r.report);
}

describe("pub_and_get against a real Mosquitto broker", () => {
  test("publishes, waits for the reply that matches accept, and returns it", async () => {
    const r = await run(
      'async function main() { const reply = await pub_and_get("sensors/7/get", { want: 3 }, "sensors/7/state", { seq: 3 }); return JSON.parse(reply); }',
    );
    expect(r.error).toBeUndefined();
    expect(r.output).toEqual({ seq: 3, temp: 21.5 });
  });

  test("without accept the first reply wins; on the request topic our own echo is ignored", async () => {
    const first = await run(
      'async function main() { return JSON.parse(await pub_and_get("sensors/8/get", { want: 5 }, "sensors/8/state")); }',
    );
    expect(first.output).toEqual({ seq: 0, temp: -1 });
    const echo = await run(
      'async function main() { return { r: await pub_and_get("echo/topic", "ping") }; }',
    );
    expect(echo.output).toEqual({ r: "pong" });
  });

  test("no reply within the timeout resolves to null", async () => {
    const r = await run('async function main() { return { r: await pub_and_get("nobody/listens", "hi") }; }');
    expect(r.output).toEqual({ r: null });
  });

  test("topics outside the allowlists are refused", async () => {
    const pub = await run(
      'async function main() { return { r: await pub_and_get("admin/reboot", "now", "sensors/1/state") }; }',
    );
    expect(pub.error).toEqual({
      type: "io",
      message: 'pub_and_get: publishing to "admin/reboot" is not allowlisted',
    });
    const sub = await run(
      'async function main() { return { r: await pub_and_get("sensors/1/get", "{}", "secrets/x") }; }',
    );
    expect(sub.error?.message).toBe('pub_and_get: subscribing to "secrets/x" is not allowlisted');
    const wild = await run('async function main() { return { r: await pub_and_get("sensors/#", "{}") }; }');
    expect(wild.error?.message).toMatch(/must not contain wildcards/);
  });

  test("topic filter matching", () => {
    expect(topicMatches("a/+/c", "a/b/c")).toBe(true);
    expect(topicMatches("a/#", "a/b/c")).toBe(true);
    expect(topicMatches("a/#", "a")).toBe(true);
    expect(topicMatches("a/+", "a/b/c")).toBe(false);
    expect(topicMatches("a/b", "a/b/c")).toBe(false);
  });
});
