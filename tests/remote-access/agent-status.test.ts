// The agent's tunnel status → the console's Remote access tab: a real TunnelClient given the token and
// host key of a heartbeat reply, whose server cannot be reached, reports its error in the next heartbeat
// the agent builds; the tab shows that error (escaped), and nothing once the tunnel's status is clean.
import { afterAll, describe, expect, test } from "bun:test";
import { TunnelClient } from "../../agent/tunnel-client";
import { freePort } from "../agent/helpers";
import { sendHeartbeat } from "../alerts/helpers";
import { ScriptedAgent } from "../helpers/agent-telemetry";
import { startTestApp } from "../helpers/app";
import { deviceWithLease, waitFor } from "./helpers";

const app = await startTestApp();
afterAll(() => app.stop());

describe("the agent's tunnel status in the console", () => {
  test("an unreachable tunnel server: the agent's error is on the Remote access tab", async () => {
    const device = await deviceWithLease(app, await app.token("operator"));
    const client = new TunnelClient(
      {
        server: `127.0.0.1:${await freePort()}`,
        web_target: "http://127.0.0.1:9",
        ssh_target: "127.0.0.1:22",
      },
      app.url,
      { info() {}, warn() {} },
    );
    try {
      await client.apply(device.reply.remote_access_token, device.reply.tunnel_host_key);
      await waitFor(() => typeof client.status().error === "string", 10_000, "the tunnel's error");
      const status = client.status();
      const agent = new ScriptedAgent(app.config.dataDir, "tunnel-status", []);
      await sendHeartbeat(app, device, await agent.heartbeat(device.id, {}, status));
      // The tab's panel, as its script loads it.
      const operator = await app.session("operator");
      const panel = () =>
        app.fetch(`/devices/${device.id}/remote-access/panel`, {
          method: "POST",
          headers: { cookie: operator.cookie, "x-csrf-token": operator.csrf },
        });
      const page = await panel();
      const html = await page.text();
      expect(page.status).toBe(200);
      const row = /<dt>Agent error<\/dt>\s*<dd>([^<]*)<\/dd>/.exec(html)?.[1];
      expect(row).toBe(Bun.escapeHTML(status.error!));
      await client.stop();
      await sendHeartbeat(app, device, await agent.heartbeat(device.id, {}, client.status()));
      const after = await (await panel()).text();
      expect(/<dt>Agent error<\/dt>\s*<dd>([^<]*)<\/dd>/.exec(after)?.[1]).toBe("—");
    } finally {
      await client.stop();
    }
  });
});
