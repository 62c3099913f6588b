// Journeys 4 (remote access through Caddy), 5 (terminal) and 6 (revoke).
import { expect } from "bun:test";
import { waitFor } from "../../terminal/helpers";
import { untilScreen } from "../../terminal/screen";
import { DEVICE_DOMAIN } from "../fleet";
import type { Step, World } from "../world";

/** 4: Open web UI through Caddy shows the device page; closing the page ends access (403 after the grace). */
export async function remoteAccess(w: World, step: Step) {
  const { fleet, page, agents, ids, at, tunnelUp, devicePage, statusInBrowser } = w;
  await page.goto(at("/alerts")); // no other console page of A holds a lease
  const remote = await step("open_device_page", async () => {
    const opened = await devicePage(ids.A);
    await opened.locator("[data-remote-panel]").waitFor({ timeout: 10_000 });
    await opened.locator("text=Connected").waitFor({ timeout: 15_000 });
    return opened;
  });
  const deviceUi = await step("open_web_ui", async () => {
    const [popup] = await Promise.all([
      remote.waitForEvent("popup"),
      remote.locator("[data-open-web-ui]").click(),
    ]);
    await popup.locator("h1", { hasText: "device A" }).waitFor({ timeout: 15_000 });
    return popup;
  });
  const deviceUrl = await step("device_page_through_caddy", async () => {
    const url = new URL(deviceUi.url());
    expect(url.protocol).toBe("https:");
    expect(url.hostname).toBe(`dev-${ids.A.replaceAll("-", "")}.${DEVICE_DOMAIN}`);
    expect(url.port).toBe(String(fleet.httpsPort));
    expect(agents.A.web.seen).toContain("GET /");
    // A reload through Caddy with the access cookie still reaches the device.
    expect(await statusInBrowser(`${url.origin}/again`)).toBe(200);
    expect(agents.A.web.seen).toContain("GET /again");
    return url.origin;
  });
  await step("close_page", async () => {
    await deviceUi.close();
    await remote.close({ runBeforeUnload: true });
  });
  await step("refused_after_grace", async () => {
    await waitFor(
      async () => (await statusInBrowser(`${deviceUrl}/after`)) === 403,
      15_000,
      "403 from the device host after the page closed and the 1 s grace",
    );
    await waitFor(async () => !(await tunnelUp(ids.A)), 15_000, "A's tunnel down");
  });
}

/** 5: `echo $((6*7))` shows 42; the recording plays and holds 42. */
export async function terminal(w: World, step: Step) {
  const { fleet, page, ids, at, devicePage } = w;
  const terminal = await step("open_terminal", async () => {
    const opened = await devicePage(ids.A, "terminal");
    await opened.click("[data-terminal-start]");
    await opened.waitForSelector('#terminal[data-state="connected"]', { timeout: 30_000 });
    await opened.click("[data-terminal-screen]");
    return opened;
  });
  await step("echo_42", async () => {
    await terminal.keyboard.type("echo $((6*7))");
    await terminal.keyboard.press("Enter");
    await untilScreen(terminal, (lines) => lines.includes("42"), "42 on the terminal");
  });
  const sessionId = await step("end_session", async () => {
    await terminal.click("[data-terminal-end]");
    await terminal.waitForSelector('#terminal[data-state="ended"]', { timeout: 15_000 });
    const [session] = await fleet.sql<{ id: string; end_reason: string }[]>`
          select id, end_reason from terminal_sessions where device_id = ${ids.A} order by created_at desc limit 1`;
    expect(session?.end_reason).toBe("ended");
    await terminal.close();
    return session!.id;
  });
  await step("recording_holds_42", async () => {
    await page.goto(at(`/terminal/sessions/${sessionId}`));
    await page.waitForSelector('#player[data-loaded="1"]', { timeout: 15_000 });
    await page.evaluate(() => {
      const root = document.getElementById("player") as HTMLElement & {
        player: { seekTo(s: number): void; duration(): number };
      };
      root.player.seekTo(root.player.duration());
    });
    await untilScreen(page, (lines) => lines.includes("42"), "42 in the playback", "#player");
  });
}

/** 6: the token is refused, the tunnel closes, a terminal cannot open. */
export async function revoke(w: World, step: Step) {
  const { fleet, page, agents, ids, at, devicePath, tunnelUp, devicePage, postFromPage } = w;
  const remote = await step("tunnel_up", async () => {
    const opened = await devicePage(ids.B);
    await opened.locator("text=Connected").waitFor({ timeout: 15_000 });
    expect(await tunnelUp(ids.B)).toBe(true);
    return opened;
  });
  await step("revoke", async () => {
    await page.goto(at(devicePath(ids.B)));
    page.once("dialog", (dialog) => void dialog.accept());
    await Promise.all([
      page.waitForURL((url) => url.pathname.startsWith("/devices")),
      page.click(`form[action="/devices/${ids.B}/revoke"] button`),
    ]);
    const [device] = await fleet.sql<{ approval_status: string }[]>`
          select approval_status from devices where id = ${ids.B}`;
    expect(device?.approval_status).toBe("rejected");
  });
  await step("token_refused", async () => {
    const identity = JSON.parse(
      await Bun.file(`${agents.B.dir}/root/var/lib/outpost-agent/identity.json`).text(),
    ) as { uuid: string; token: string };
    expect(identity.uuid).toBe(ids.B);
    const response = await fetch(
      `${fleet.agentUrl}/api/v1/devices/${ids.B}/heartbeat?api_key=${encodeURIComponent(identity.token)}`,
      { method: "POST", headers: { "content-type": "application/json" }, body: "{}" },
    );
    expect(response.status).toBe(403);
    expect(await response.text()).toContain("device_not_approved");
  });
  await step("tunnel_closed", async () => {
    await waitFor(async () => !(await tunnelUp(ids.B)), 15_000, "B's tunnel closed");
    await remote.close();
  });
  await step("terminal_refused", async () => {
    const refused = await postFromPage(page, `/devices/${ids.B}/terminal`);
    expect(refused.status).toBe(404);
    expect(refused.body).toContain("device_not_found");
  });
}
