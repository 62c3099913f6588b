// What the real agent posts back reaches the operator, entry by entry: its executor's output for a batch
// with a command that has no id (the spec's "missing command id … yields a failed command result
// produced by the client") and a repeated one is posted by the agent's own client, once, and every
// entry is recorded: the real command on its row, the others as results for no command, shown on the
// device page.
import { afterAll, describe, expect, test } from "bun:test";
import path from "node:path";
import { DeviceApiClient } from "../../agent/api-client";
import { executeCommands } from "../../agent/commands/executor";
import type { ServerCommand } from "../../agent/commands/types";
import { postResults } from "../../agent/poller";
import { ScriptStore } from "../../agent/scripts/store";
import { getCommand, queueCommand } from "../../modules/commands/service";
import { logger, tempDir, testConfig } from "../agent/helpers";
import { approvedDevice, heartbeatUrl, json, sampleHeartbeat } from "../devices/helpers";
import { startTestApp } from "../helpers/app";

const app = await startTestApp();
const sql = app.database.sql;
const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe("the agent's own results, posted by the agent", () => {
  test("a command without an id and a repeated one cost nothing: every entry is recorded and shown", async () => {
    const device = await approvedDevice(app);
    const queued = await queueCommand(sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: 600 });
    const beat = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
    const delivered = ((await beat.json()) as { data: { commands: ServerCommand[] } }).data.commands;
    expect(delivered.map((c) => c.command_id)).toEqual([queued.id]);
    // A broken delivery as the agent may meet one: the command once more, and one with no id.
    const { command_id: _, ...withoutId } = delivered[0]!;
    const batch = [...delivered, delivered[0]!, withoutId];

    const config = testConfig(path.join(tmp.dir, "device"), { server_url: app.url });
    const store = new ScriptStore(config.scripts_dir);
    const results = await executeCommands(batch, { config, store, logger });
    expect(results.map((r) => [r.command_id, r.status, r.error])).toEqual([
      [queued.id, "OK", undefined],
      [queued.id, "FAILED", "duplicate_command_id"],
      ["", "FAILED", "missing_command_id"],
    ]);

    // The agent's own client; it would re-post a refused batch without the uncorrelatable entries.
    const posted: { path: string; body: unknown; status: number }[] = [];
    const api = new DeviceApiClient(app.url, 10_000);
    const original = globalThis.fetch;
    const recording = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const response = await original(input, init);
      posted.push({
        path: new URL(String(input)).pathname,
        body: JSON.parse(String(init?.body ?? "null")),
        status: response.status,
      });
      return response;
    }) as typeof fetch;
    globalThis.fetch = recording;
    let ok: string;
    try {
      ok = await postResults(api, { uuid: device.id, token: device.token }, results, logger);
    } finally {
      globalThis.fetch = original;
    }
    expect(ok).toBe("posted");
    expect(posted.map((p) => [p.path, p.status])).toEqual([
      [`/api/v1/devices/${device.id}/command_results`, 202],
    ]);
    expect(posted[0]!.body).toEqual({ results });

    const stored = (await getCommand(sql, queued.id))!;
    expect(stored.status).toBe("succeeded");
    const unmatched = await sql<{ command_id: string; reason: string; status: string; error: string }[]>`
      select command_id, reason, status, error from unmatched_command_results
      where device_id = ${device.id} order by command_id`;
    expect([...unmatched]).toEqual([
      { command_id: "", reason: "missing_command_id", status: "FAILED", error: "missing_command_id" },
      {
        command_id: queued.id,
        reason: "duplicate_command_id",
        status: "FAILED",
        error: "duplicate_command_id",
      },
    ]);

    // Operators see them on the device page (Commands tab), under the command history.
    const viewer = await app.session("viewer");
    const page = await app.fetch(`/devices/${device.id}?tab=commands`, {
      headers: { cookie: viewer.cookie },
    });
    expect(page.status).toBe(200);
    const html = await page.text();
    const section = html.slice(html.indexOf('id="unmatched-results"'));
    expect(section).toContain("Results for no command");
    expect(section).toContain("2 in all");
    expect(section).toContain("no command id");
    expect(section).toContain("an id repeated in one post");
    expect(section).toContain("missing_command_id");
  }, 60_000);
});
