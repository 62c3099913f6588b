// Device detail in real Chromium: the list_scripts round trip with one real agent poll, install (text
// and file)/remove/cancel, offline and pending state. Its telemetry: device-telemetry.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { queueCommand } from "../../modules/commands/service";
import { tempDir } from "../agent/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { markSeen } from "../helpers/seen";
import {
  agentHeartbeat,
  agentPollAs,
  approvedDevice,
  heartbeat,
  postResults,
  registerDevice,
  signedIn,
} from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();

const device = await approvedDevice(app, {
  product_name: "edge-gateway",
  metadata: { name: "pump-station-7" },
});

// The real agent's state and config: its identity is the test device's (as `register` would store).
const agentState = tempDir("outpost-console-agent-");
afterAll(() => agentState.cleanup());

const agentPollOnce = (identity: { id: string; token: string }) => agentPollAs(app, agentState.dir, identity);

/** An approved device whose last `list_scripts` answer names `names`, in the agent's reply shape. */
async function deviceWithScripts(names: string[]) {
  const own = await approvedDevice(app, { product_name: "edge-gateway", metadata: { name: "scripted" } });
  await queueCommand(app.database.sql, { deviceId: own.id, type: "list_scripts", ttlSeconds: 3600 });
  const reply = await heartbeat(app, own, await agentHeartbeat({ cpu: 1, memory: 2, disk: 3 }));
  const command = reply.commands.find((c) => c.type === "list_scripts")!;
  const scripts = names.map((name) => ({
    name,
    version: 1,
    path: `/var/lib/outpost/scripts/${name}.v1.js`,
    active: true,
  }));
  await postResults(app, own, [{ command_id: command.command_id, status: "OK", output: { scripts } }]);
  return own;
}

describe("device detail", () => {
  test("list_scripts: queued in the UI, answered by one real agent poll, shown without reload", async () => {
    await heartbeat(app, device, await agentHeartbeat({ cpu: 5, memory: 30, disk: 40 })); // online: answers soon
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    expect(await page.locator("text=has not listed its scripts yet").count()).toBe(1);
    await page.click('button:has-text("Ask the device for its list")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("answer appears here");
    expect(await page.locator(".flash.info").textContent()).toContain("is queued");
    await page.waitForSelector('[data-live-status][data-state="live"]');

    // One real agent poll (agent/main.ts, as a subprocess, with this device's identity): its
    // heartbeat reply carries the command, the agent runs list_scripts and posts the result.
    const command = (
      await app.database.sql<{ id: string }[]>`
      select id::text from pending_commands where device_id = ${device.id}::uuid and type = 'list_scripts'`
    )[0]!;
    await agentPollOnce(device);
    // The page refreshes its panel on the live event for this device (no reload).
    await page.waitForSelector("[data-scripts-list] tr", { timeout: 10_000 });
    const names = await page.locator("[data-scripts-list] tr td:first-child").allTextContents();
    // The agent's built-in scripts, as it installed them into its state directory.
    expect(names).toEqual(["cpu", "disk", "load", "memory", "network", "uptime"]);
    const paths = await page.locator("[data-scripts-list]").textContent();
    expect(paths).toContain(agentState.dir);
    await screenshot(page, "console-device-scripts");

    await page.click('nav.tabs a:has-text("Commands")');
    await page.waitForURL(/tab=commands/);
    const row = page.locator(`tr[data-command-id="${command.id}"]`);
    expect(await row.locator(".badge").textContent()).toBe("succeeded");
    await context.close();
  }, 60_000);

  test("install a script from text and from a file, remove one, cancel a queued command", async () => {
    const device = await deviceWithScripts(["cpu", "disk"]);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    // Without front matter the form refuses and keeps the text.
    await page.fill('textarea[name="text"]', "function main() { return { x: 1 }; }");
    await page.click('button:has-text("Queue install")');
    await page.locator("#install-script .field-error").waitFor();
    expect(await page.locator("#install-script .field-error").textContent()).toBe(
      'The agent would refuse this script: script must start with a front-matter block comment "/*---"',
    );
    expect(await page.inputValue('textarea[name="text"]')).toBe("function main() { return { x: 1 }; }");
    // Refused in place: the address is still the page's, so a reload posts nothing again.
    expect(new URL(page.url()).pathname).toBe(`/devices/${device.id}`);
    // The agent's own parser decides: a schema that is not an object is refused at once.
    await page.fill(
      'textarea[name="text"]',
      "/*---\nname: x\nschema:\n  type: string\n---*/\nfunction main() {}\n",
    );
    await page.click('button:has-text("Queue install")');
    await page.locator("#install-script .field-error", { hasText: "type: object" }).waitFor();
    // The browser submits the textarea with CRLF line endings; the device receives LF.
    const script =
      "/*---\nname: fan-speed # the fan\nversion: 1\nschema:\n  type: object\n---*/\nfunction main() { return { rpm: 1200 }; }\n";
    await page.fill('textarea[name="text"]', script);
    await page.click('button:has-text("Queue install")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain('Install of "fan-speed" queued');
    expect(new URL(page.url()).searchParams.get("tab")).toBe("commands");
    const [pasted] = await app.database.sql<{ payload: string }[]>`
      select payload::text as payload from pending_commands
      where device_id = ${device.id}::uuid and type = 'install_script' and status = 'queued'`;
    expect(JSON.parse(pasted!.payload)).toMatchObject({ name: "fan-speed", data: script });
    const queued = page.locator("tbody tr", { hasText: "install_script" });
    expect(await queued.locator(".badge").textContent()).toBe("queued");
    // The history names the script, not just the command type.
    expect((await queued.locator(".command-subject").textContent())?.trim()).toBe("fan-speed");

    // The queued command's own event refreshes the panel around now: a refresh never swaps under a
    // pressed pointer (tests/console/live-press.test.ts), so the click is not lost to it.
    page.once("dialog", (dialog) => void dialog.accept());
    await page
      .locator("tbody tr", { hasText: "install_script" })
      .locator('button:has-text("Cancel")')
      .click();
    await page.locator(".flash.success", { hasText: "Command cancelled" }).waitFor({ timeout: 10_000 });
    expect(await page.locator("tbody tr", { hasText: "install_script" }).count()).toBe(0);

    // Install from a file: the browser uploads it (multipart); the name comes from its front matter.
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    const fileScript =
      "/*---\nname: disk-temp\nversion: 3\nschema:\n  type: object\n---*/\nfunction main() { return { celsius: 41 }; }\n";
    await page.setInputFiles('#install-script input[type="file"]', {
      name: "disk-temp.js",
      mimeType: "text/javascript",
      buffer: Buffer.from(fileScript),
    });
    // A live refresh of the tab (someone else queues a command) keeps the chosen file in the form.
    const pendingList = page.locator("#tab-panel", { hasText: "list_scripts request is queued" });
    expect(await pendingList.count()).toBe(0);
    await queueCommand(app.database.sql, { deviceId: device.id, type: "list_scripts", ttlSeconds: 3600 });
    await pendingList.waitFor();
    await page.click('button:has-text("Queue install")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain('Install of "disk-temp" queued');
    expect(
      await page.locator("tbody tr", { hasText: "install_script" }).locator(".badge").textContent(),
    ).toBe("queued");
    const [uploaded] = await app.database.sql<{ payload: string }[]>`
      select payload::text as payload from pending_commands
      where device_id = ${device.id}::uuid and type = 'install_script' and status = 'queued'`;
    expect(JSON.parse(uploaded!.payload)).toMatchObject({ name: "disk-temp", data: fileScript });
    // A file without front matter is refused, and nothing more is queued.
    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    await page.setInputFiles('#install-script input[type="file"]', {
      name: "broken.js",
      mimeType: "text/javascript",
      buffer: Buffer.from("function main() { return {}; }"),
    });
    await page.click('button:has-text("Queue install")');
    expect(await page.locator("#install-script .field-error").textContent()).toContain("front-matter");
    const [queuedInstalls] = await app.database.sql<{ n: number }[]>`
      select count(*)::int as n from pending_commands
      where device_id = ${device.id}::uuid and type = 'install_script' and status = 'queued'`;
    expect(queuedInstalls!.n).toBe(1);

    await page.goto(`${app.url}/devices/${device.id}?tab=scripts`);
    page.once("dialog", (dialog) => void dialog.accept());
    await page
      .locator("[data-scripts-list] tr", { has: page.locator("td:first-child", { hasText: /^cpu$/ }) })
      .locator('button:has-text("Remove")')
      .click();
    await page.waitForSelector(".flash.success");
    const reply = await heartbeat(app, device, await agentHeartbeat({ cpu: 10, memory: 40, disk: 62 }));
    const remove = reply.commands.find((c) => c.type === "remove_script") as { args: string[] } | undefined;
    expect(remove?.args).toEqual(["cpu"]);
    await page.reload();
    await screenshot(page, "console-device-commands");
    await page.setViewportSize(PHONE);
    await page.reload();
    await screenshot(page, "console-device-commands-phone");
    await context.close();
  }, 60_000);

  test("an offline device says so and when it was last seen; a pending one offers approval", async () => {
    await markSeen(app.database.sql, device.id, 7200);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}`);
    expect(await page.locator(".offline-banner").textContent()).toContain("This device is offline.");
    expect(await page.locator(".offline-banner").textContent()).toContain("2 h ago");
    await screenshot(page, "console-device-offline");

    // A pending agent that keeps asking is "waiting", with its last attempt, not "offline, never seen".
    const pending = await registerDevice(app, { product_name: "edge-gateway" });
    await app.database.sql`update devices set last_registration_at = now() - interval '3 minutes'
      where id = ${pending.id}::uuid`;
    await page.goto(`${app.url}/devices/${pending.id}`);
    expect(await page.locator(".offline-banner").textContent()).toContain("Waiting for approval.");
    expect(await page.locator(".offline-banner").textContent()).toContain(
      "last asked for its token 3 min ago",
    );
    expect(await page.locator(".device-header .badge").allTextContents()).toEqual(["pending", "waiting"]);
    expect(await page.locator(".device-header dt").allTextContents()).toContain("Last attempt");
    await screenshot(page, "console-device-pending");
    // Its next attempt is recorded.
    await registerDevice(app, { product_name: "edge-gateway", mac_address: pending.mac });
    await page.goto(`${app.url}/devices/${pending.id}`);
    expect(await page.locator(".offline-banner").textContent()).toContain(
      "last asked for its token just now",
    );
    await page.goto(`${app.url}/devices?approval_status=pending`);
    const row = page.locator("tbody tr", { hasText: pending.mac });
    expect(await row.locator(".c-online").textContent()).toContain("waiting");
    expect(await row.locator(".c-seen").textContent()).toContain("asked just now");
    await page.goto(`${app.url}/devices/${pending.id}`);
    await page.click('button:has-text("Approve")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("within about 10 seconds");
    expect(await page.locator(".device-header .badge").first().textContent()).toBe("approved");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click('button:has-text("Delete")');
    await page.waitForURL(`${app.url}/devices`);
    expect(await page.locator(".flash.success").textContent()).toContain("deleted");
    expect((await page.goto(`${app.url}/devices/${pending.id}`))!.status()).toBe(404);
    await context.close();
  }, 60_000);
});
