// Journey 7: SIGKILL the tunnel and one web process mid-journey, restart them; agents reconnect and
// every queued command runs exactly once.
import { expect } from "bun:test";
import { waitFor } from "../../terminal/helpers";
import { PROBE_SCRIPT, type Step, type World } from "../world";

/** 7: kill -9 the tunnel and a web process mid-journey, restart; agents reconnect; queued commands run once. */
export async function faults(w: World, step: Step) {
  const { fleet, page, agents, ids, at, devicePath, devicePage } = w;
  const journeyStart = new Date(Date.now() - 1000).toISOString();
  const remote = await devicePage(ids.A);
  await remote.locator("text=Connected").waitFor({ timeout: 15_000 });
  const queued = () => fleet.sql<{ id: string; status: string }[]>`
        select id, status from pending_commands where device_id = ${ids.A} and type = 'install_script'
        and queued_at > ${journeyStart}::timestamptz order by queued_at`;
  const queueInstall = async (version: number) => {
    // A post the proxy could not deliver (its web process had just died) is made again, as an operator
    // would; one that arrived (its answer lost) is not, so a command is never queued twice.
    for (let attempt = 1; ; attempt++) {
      const before = (await queued()).length;
      await page.goto(at(devicePath(ids.A, "scripts")));
      await page.fill(
        '#install-script-form textarea[name="text"]',
        PROBE_SCRIPT.replace("version: 1", `version: ${version}`),
      );
      // Queued, the console shows the device's commands.
      const [shown] = await Promise.all([
        page
          .waitForURL((url) => url.searchParams.get("tab") === "commands", { timeout: 15_000 })
          .then(
            () => true,
            () => false,
          ),
        page.click('#install-script-form button[type="submit"]'),
      ]);
      if (shown || (await queued()).length > before) return;
      if (attempt === 3) throw new Error(`queueing version ${version} failed 3 times`);
    }
  };
  await step("queue_commands", async () => {
    await queueInstall(2);
  });
  await step("kill_tunnel_and_web", async () => {
    await Promise.all([fleet.kill("tunnel"), fleet.kill("web1")]);
    // Mid-journey: the operator goes on queueing while they are down (Caddy sends it to web2).
    await queueInstall(3);
    await queueInstall(4);
    await waitFor(async () => (await queued()).length === 3, 10_000, "three install commands queued");
  });
  await step("restart", async () => {
    await Promise.all([fleet.restart("tunnel"), fleet.restart("web1")]);
  });
  await step("agents_reconnect", async () => {
    const restarted = new Date().toISOString();
    await waitFor(
      async () =>
        (
          await fleet.sql`select 1 from devices where id = ${ids.A} and last_seen_at > ${restarted}::timestamptz`
        ).length > 0,
      15_000,
      "a heartbeat from A after the restart",
    );
    // A row of the killed process may linger: the agent's new tunnel is one connected since.
    await waitFor(
      async () =>
        (
          await fleet.sql`select 1 from tunnel_connections where device_id = ${ids.A}
                and connected_at > ${restarted}::timestamptz`
        ).length > 0,
      30_000,
      "A's tunnel back on the restarted tunnel process",
    );
  });
  await step("commands_once", async () => {
    const commands = await waitFor(
      async () => {
        const rows = await queued();
        const done =
          rows.length === 3 && rows.every((r) => r.status !== "queued" && r.status !== "delivered");
        return done ? rows : undefined;
      },
      // The agents backed off (capped exponential, jittered) while the processes were down; on a
      // busy CI machine their next poll can come 20–30 s after the restart. Once-only is the point here.
      45_000,
      "the three install commands to finish",
    );
    expect(commands.map((c) => c.status)).toEqual(["succeeded", "succeeded", "succeeded"]);
    const log = agents.A.log().split("\n");
    for (const command of commands) {
      const runs = log.filter(
        (line) => line.includes(`"command_id":"${command.id}"`) && line.includes("command executed"),
      );
      expect(runs.length).toBe(1);
    }
  });
  await step("tunnel_again", async () => {
    // The page's live connection was served by a process that died: the operator reloads it.
    await remote.reload();
    await remote.locator("text=Connected").waitFor({ timeout: 15_000 });
    const [popup] = await Promise.all([
      remote.waitForEvent("popup"),
      remote.locator("[data-open-web-ui]").click({ timeout: 10_000 }),
    ]);
    await popup
      .locator("h1", { hasText: "device A" })
      .waitFor({ timeout: 15_000 })
      .catch(async (error) => {
        throw new Error(`${error.message}; ${popup.url()} showed: ${(await popup.content()).slice(0, 300)}`);
      });
    await popup.close();
    await remote.close();
  });
}
