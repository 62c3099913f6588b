import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { scriptText } from "../agent/helpers";
import { startTestApp } from "../helpers/app";
import { agentHarness } from "./agent-harness";

// The whole loop of issue 4 against the real server: the agent (from source, as a subprocess)
// registers, waits for approval, polls with its built-in scripts, installs a script the server
// queues, reports its output in the next heartbeat, and removes it again.
const app = await startTestApp();
const { work, agent, pollOnce, queue, commandStatus, latestScripts, registerApproved, cleanup } =
  await agentHarness(app, "loop-test");
afterAll(cleanup);

describe("agent ↔ server loop", () => {
  test("register → approve → poll → install_script → output reported → remove_script", async () => {
    const device = await registerApproved();
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
