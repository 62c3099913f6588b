// Agent labels → server: the agent's own code (its config loader, registration body and the start-up
// check for changed labels) against the real device API; the labels land on the device, answer tag
// queries, and are replaced when the configuration changes, and only then re-sent.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../../agent/config.ts";
import { registerOnce, sendChangedLabels } from "../../agent/register.ts";
import { loadSentLabels } from "../../agent/state.ts";
import { pollerContext } from "../agent/helpers";
import { startTestApp } from "../helpers/app";
import { tempDir } from "../helpers/temp";

const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());

/** The agent's configuration as an operator writes it (YAML), loaded by the agent's own loader. */
function agentConfig(dir: string, labels: string) {
  const file = path.join(dir, "agent.yaml");
  writeFileSync(
    file,
    `server_url: ${app.url}\nstate_dir: ${dir}/state\nproduct_name: labelled\nlabels:\n${labels}`,
  );
  return loadConfig({ file, env: {}, systemFile: path.join(dir, "none.yaml") }).config;
}

async function devicesMatching(q: string) {
  const response = await app.fetch(`/api/v1/devices?q=${encodeURIComponent(q)}`, {
    headers: { authorization: `Bearer ${await app.token("viewer")}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { id: string; labels: Record<string, string> }[] }).data;
}

describe("labels an agent declares", () => {
  test("are sent at registration, found by tag queries, and re-sent only when they change", async () => {
    const dir = tempDir("outpost-agent-labels-");
    const ctx = pollerContext(agentConfig(dir, '  site: berlin\n  hw.rev: "b2"\n'));
    const registered = await registerOnce(ctx, null);
    expect(registered).toBeNull(); // pending: no token yet, but registered
    const [device] = await devicesMatching("tag:site=berlin tag:hw.rev=b2");
    expect(device?.labels).toEqual({ site: "berlin", "hw.rev": "b2" });
    expect(loadSentLabels(ctx.config.state_dir)).toEqual({ site: "berlin", "hw.rev": "b2" });

    const lastRegistration = async () =>
      (
        await app.database.sql<{ at: string }[]>`
          select last_registration_at::text as at from devices where id = ${device!.id}::uuid`
      )[0]!.at;
    const creds = { uuid: device!.id, token: "unused" };
    // Unchanged labels: the start-up check sends nothing.
    const before = await lastRegistration();
    await sendChangedLabels(ctx, creds);
    expect(await lastRegistration()).toBe(before);
    // Changed in the configuration: sent once, and the server's labels are replaced.
    const changed = pollerContext(agentConfig(dir, "  site: munich\n"));
    await sendChangedLabels(changed, creds);
    expect(await lastRegistration()).not.toBe(before);
    expect((await devicesMatching("tag:site=berlin")).map((d) => d.id)).not.toContain(device!.id);
    expect((await devicesMatching("tag:site=munich")).map((d) => d.id)).toContain(device!.id);
    expect(loadSentLabels(ctx.config.state_dir)).toEqual({ site: "munich" });
  });

  test("the agent refuses labels the server would refuse, naming the label", () => {
    const dir = tempDir("outpost-agent-labels-bad-");
    expect(() => agentConfig(dir, "  Site: berlin\n")).toThrow(/labels: key "Site" must be/);
    expect(() => agentConfig(dir, `  site: "${"x".repeat(129)}"\n`)).toThrow(
      /value of site must be at most 128/,
    );
  });

  test("the server refuses bad labels with 400 naming the label, and registers nothing", async () => {
    const response = await app.fetch("/api/v1/devices/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mac_address: "02:AB:CD:00:00:01", labels: { "bad key": "x" } }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; details: { field: string } } };
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.details.field).toBe("labels");
    const [row] = await app.database.sql`select 1 from devices where mac_address = '02:AB:CD:00:00:01'`;
    expect(row).toBeUndefined();
  });
});
