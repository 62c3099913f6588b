// run_script end to end: queued through the JSON:API, delivered in the heartbeat reply (a large script
// by reference), run by a real agent process, its output stored as the command's result. Bad payloads
// are refused with typed errors and queue nothing.
import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { commandOutcomes, runScriptOutput } from "../../modules/commands/service";
import { startTestApp } from "../helpers/app";
import { agentHarness } from "./agent-harness";

const app = await startTestApp();
const sql = app.database.sql;
const enabled = await agentHarness(app, "run-script", app.url, { run_script_enabled: true });
afterAll(enabled.cleanup);

const commandCount = async () =>
  (await sql<{ n: number }[]>`select count(*)::int as n from pending_commands`)[0]!.n;

describe("run_script through the API and a real agent", () => {
  test("an enabled agent runs it once and its output is the command's result; a failing script is failed with its output", async () => {
    const device = await enabled.registerApproved();
    // Pasted with CRLF, and over 4 KiB: delivered by reference.
    const script = [
      "// checks the disk".padEnd(5000, "."),
      "console.log('free', 42);",
      "console.warn('low on inodes');",
      "async function main() { await sleep(1); return { ok: true }; }",
    ].join("\r\n");
    const ok = await enabled.queue(device.id, {
      type: "run_script",
      payload: { data: script, name: "Disk check", timeout_seconds: 30 },
    });
    const failing = await enabled.queue(device.id, {
      type: "run_script",
      payload: { data: "console.log('before');\nthrow new Error('on purpose');" },
    });
    const [queued] = await sql<{ payload_ref: string | null; payload: { data: string; name: string } }[]>`
      select payload_ref, payload from pending_commands where id = ${ok}::uuid`;
    expect(queued!.payload_ref).not.toBeNull();
    expect(queued!.payload.data).not.toContain("\r");
    expect(queued!.payload.name).toBe("Disk check");

    await enabled.pollOnce();

    const done = await enabled.commandStatus(ok);
    expect(done).toMatchObject({
      type: "run_script",
      status: "succeeded",
      error: null,
      output: {
        exit_code: 0,
        stdout: 'free 42\n{"ok":true}\n',
        stderr: "low on inodes\n",
        stdout_truncated: false,
        stderr_truncated: false,
      },
    });
    expect(done.output.duration_ms).toBeGreaterThanOrEqual(1);
    expect(await enabled.commandStatus(failing)).toMatchObject({
      status: "failed",
      error: "exit code 1: Error: on purpose (line 2, column 16)",
      output: { exit_code: 1, stdout: "before\n", stderr: expect.stringContaining("on purpose") },
    });

    // What a rollout reads through the commands service.
    const outcomes = await commandOutcomes(sql, [ok, failing, crypto.randomUUID(), "not-an-id"]);
    expect([...outcomes.keys()].sort()).toEqual([ok, failing].sort());
    expect(outcomes.get(ok)).toMatchObject({ status: "succeeded" });
    expect(runScriptOutput(outcomes.get(ok)!.output)).toMatchObject({
      exit_code: 0,
      stdout_truncated: false,
    });
    expect(outcomes.get(failing)).toMatchObject({ status: "failed" });
    expect(runScriptOutput(outcomes.get(failing)!.output)).toMatchObject({ exit_code: 1 });
  }, 60_000);

  test("an agent with the default config refuses it: failed, with the reason, nothing run", async () => {
    // The same agent (one machine, one MAC: one device) without the key in its config file.
    const configFile = path.join(enabled.work.dir, "agent.yaml");
    const { run_script_enabled: _, ...rest } = YAML.parse(fs.readFileSync(configFile, "utf8"));
    fs.writeFileSync(configFile, YAML.stringify(rest));
    const [device] = await sql<
      { id: string }[]
    >`select id::text from devices where product_name = 'run-script'`;
    const id = await enabled.queue(device!.id, {
      type: "run_script",
      payload: { data: "console.log('should not run');" },
    });
    await enabled.pollOnce();
    expect(await enabled.commandStatus(id)).toMatchObject({
      status: "failed",
      error: "run_script is disabled by this agent's config (run_script_enabled: false)",
      output: null,
    });
  }, 60_000);

  test("bad payloads are refused with a typed error naming the field, and nothing is queued", async () => {
    const [device] = await sql<{ id: string }[]>`select id::text from devices limit 1`;
    const before = await commandCount();
    const cases: [Record<string, unknown> | undefined, string, string][] = [
      [undefined, "payload.data", "run_script needs payload.data"],
      [{ data: 42 }, "payload.data", "run_script needs payload.data"],
      [{ data: "  \r\n" }, "payload.data", "the script is empty"],
      [{ data: "#!/bin/sh\nreboot" }, "payload.data", "not a shell"],
      [{ data: "/*---\nname: x\n---*/\nfunction main() {}" }, "payload.data", "front-matter missing schema"],
      [{ data: `// ${"x".repeat(256 * 1024)}` }, "payload.data", "larger than 256 KiB"],
      [{ data: "console.log(1)", name: "two\nlines" }, "payload.name", "one line"],
      [{ data: "console.log(1)", name: "n".repeat(101) }, "payload.name", "at most 100"],
      [{ data: "console.log(1)", timeout_seconds: 0 }, "payload.timeout_seconds", "from 1 to 300"],
      [{ data: "console.log(1)", timeout_seconds: 301 }, "payload.timeout_seconds", "from 1 to 300"],
      [{ data: "console.log(1)", timeout_seconds: 1.5 }, "payload.timeout_seconds", "whole number"],
      [{ data: "console.log(1)", timeout_seconds: "10" }, "payload.timeout_seconds", "whole number"],
    ];
    for (const [payload, field, words] of cases) {
      const response = await enabled.api("POST", "/api/json/pending_commands", {
        data: {
          type: "pending_command",
          attributes: { type: "run_script", device_id: device!.id, ...(payload ? { payload } : {}) },
        },
      });
      const error = response.body.errors?.[0];
      expect({ status: response.status, code: error?.code, field: error?.source?.parameter }).toEqual({
        status: 400,
        code: "invalid_request",
        field,
      });
      expect(error.detail).toContain(words);
    }
    expect(await commandCount()).toBe(before);
  });
});
