// Acceptance in Chromium: the device page's Terminal tab with a real agent, a real sshd and the real
// tunnel. Typing, a pasted CRLF block and odd Unicode come back from the device's shell; resizing the
// window changes `stty size` there; ending the session offers a new one; the recording plays back.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { signedIn } from "../console/helpers";
import { startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { firstHeartbeat, startDevice, type TestDevice, waitFor } from "./helpers";
import { untilScreen } from "./screen";

const app = await startTestApp({ BASE_DOMAIN: "term-browser.test" });
const browser = await launchBrowser();
let device: TestDevice;

beforeAll(async () => {
  device = await startDevice(app);
  await firstHeartbeat(app.database.sql, device.id);
});
afterAll(async () => {
  await browser.close();
  await device?.stop();
});

async function openTerminal(page: Page) {
  await page.goto(`${app.url}/devices/${device.id}?tab=terminal`);
  await page.click("[data-terminal-start]");
  await page.waitForSelector('#terminal[data-state="connected"]', { timeout: 40_000 });
  await page.click("[data-terminal-screen]");
}

describe("browser terminal in Chromium", () => {
  test("type, paste CRLF text and Unicode, resize, end, play back", async () => {
    const context = await signedIn(browser, app, "operator", LAPTOP);
    const page = await context.newPage();
    await openTerminal(page);
    const marker = `outpost-${crypto.randomUUID().slice(0, 8)}`;
    await page.keyboard.type(`echo ${marker}`);
    await page.keyboard.press("Enter");
    await untilScreen(page, (lines) => lines.includes(marker), "the echo");

    // A block pasted from a Windows editor: CRLF line ends, as browsers hand them over. bash has
    // bracketed paste on, so the block runs when Enter is pressed, as for a user.
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: app.url });
    await page.evaluate(() => navigator.clipboard.writeText("echo pasted-one\r\necho pasted-two\r\n"));
    await page.click("[data-terminal-paste]");
    await page.click("[data-terminal-screen]");
    await page.keyboard.press("Enter");
    await untilScreen(
      page,
      (lines) => lines.includes("pasted-one") && lines.includes("pasted-two"),
      "both pasted lines run",
    );
    await page.keyboard.type("echo 'héllo → ✓ 日本'");
    await page.keyboard.press("Enter");
    await untilScreen(page, (lines) => lines.includes("héllo → ✓ 日本"), "Unicode round trip");
    await screenshot(page, "terminal-connected-laptop");

    // A narrower window: the terminal fits itself and tells the device. On a loaded machine Chromium
    // lays out (and the terminal fits) a while after the viewport changes: wait for the new size.
    const terminalSize = () =>
      page.evaluate(() => {
        const term = (
          document.getElementById("terminal") as HTMLElement & { terminal: { cols: number; rows: number } }
        ).terminal;
        return `${term.rows} ${term.cols}`;
      });
    const wide = await terminalSize();
    await page.setViewportSize({ width: 900, height: 700 });
    const size = await waitFor(
      async () => {
        const now = await terminalSize();
        return now !== wide ? now : undefined;
      },
      15_000,
      `the terminal to fit the narrower window (was ${wide})`,
    );
    await page.keyboard.type("stty size");
    await page.keyboard.press("Enter");
    await untilScreen(page, (lines) => lines.includes(size), `stty size ${size}`);

    await page.click("[data-terminal-end]");
    await page.waitForSelector('#terminal[data-state="ended"]', { timeout: 20_000 });
    // End session is its own reason, in words (issue 42: it was recorded as `closed`, "Ended: closed").
    expect(await page.textContent("[data-terminal-status]")).toBe("Ended: Ended with End session");
    expect(await page.isVisible("[data-terminal-start]")).toBe(true);
    expect(await page.textContent("[data-terminal-start]")).toBe("Start new session");

    const [session] = await app.database.sql<{ id: string; end_reason: string }[]>`
      select id, end_reason from terminal_sessions where device_id = ${device.id} order by created_at desc limit 1`;
    expect(session!.end_reason).toBe("ended");
    await page.goto(`${app.url}/terminal/sessions`);
    expect(await page.textContent(`tr[data-session-id="${session!.id}"]`)).toContain(
      "Ended with End session",
    );
    await page.goto(`${app.url}/terminal/sessions/${session!.id}`);
    expect(await page.textContent("dl.facts")).toContain("Ended with End session");
    await page.waitForSelector('#player[data-loaded="1"]');
    await page.evaluate(() => {
      const root = document.getElementById("player") as HTMLElement & {
        player: { seekTo(s: number): void; duration(): number };
      };
      root.player.seekTo(root.player.duration());
    });
    // xterm.js draws what the seek wrote a moment later (later still on a loaded machine).
    await untilScreen(
      page,
      (lines) => lines.includes(marker) && lines.includes("héllo → ✓ 日本"),
      "the playback's screen",
      "#player",
    );
    await screenshot(page, "terminal-playback-laptop");
    await context.close();
  }, 120_000);

  test("at phone width the terminal fits the screen and works", async () => {
    const context = await signedIn(browser, app, "operator", PHONE);
    const page = await context.newPage();
    await openTerminal(page);
    await page.keyboard.type("echo phone-$((6*7))");
    await page.keyboard.press("Enter");
    await untilScreen(page, (lines) => lines.includes("phone-42"), "the echo");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, "terminal-phone");
    await context.close();
  }, 90_000);

  test("a viewer sees the sessions but no terminal", async () => {
    const context = await signedIn(browser, app, "viewer", LAPTOP);
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=terminal`);
    expect(await page.$("[data-terminal-start]")).toBeNull();
    expect(await page.textContent("main")).toContain(
      "Your role can watch recorded sessions but not open terminals.",
    );
    await page.goto(`${app.url}/terminal/sessions`);
    expect(await page.$$("tr[data-session-id]")).not.toHaveLength(0);
    await context.close();
  }, 60_000);
});
