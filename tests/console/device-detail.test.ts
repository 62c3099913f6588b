// Device detail in real Chromium: gauges and uPlot charts from heartbeats stored through the device
// API, the list_scripts round trip with one real agent poll, install (text and file)/remove/cancel,
// the chart field picker, offline state.
import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { queueCommand } from "../../modules/commands/service";
import { AGENT_MAIN, BUN, tempDir } from "../agent/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { markSeen } from "../helpers/seen";
import { agentHeartbeat, approvedDevice, heartbeat, postResults, registerDevice, signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();

const device = await approvedDevice(app, {
  product_name: "edge-gateway",
  metadata: {
    name: "pump-station-7",
    hostname: "pump7",
    ip_address: "198.51.100.7",
    os: { platform: "linux", release: "6.1.0-27-arm64", arch: "arm64" },
  },
});

// The real agent's state and config: its identity is the test device's (as `register` would store).
const agentState = tempDir("outpost-console-agent-");
afterAll(() => agentState.cleanup());

async function agentPollOnce(identity: { id: string; token: string }) {
  const stateDir = path.join(agentState.dir, "state");
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(
    path.join(stateDir, "identity.json"),
    `${JSON.stringify({ uuid: identity.id, token: identity.token })}\n`,
    { mode: 0o600 },
  );
  const configFile = path.join(agentState.dir, "agent.yaml");
  fs.writeFileSync(
    configFile,
    YAML.stringify({
      server_url: app.url,
      state_dir: stateDir,
      authorized_keys_path: path.join(agentState.dir, "ssh", "authorized_keys"),
      log_level: "warn",
    }),
  );
  const child = Bun.spawn([BUN, AGENT_MAIN, "poll", "--once"], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: agentState.dir,
      OUTPOST_AGENT_CONFIG: configFile,
    },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  clearTimeout(timer);
  expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
}

/** An approved device whose last `list_scripts` answer names `names`, in the agent's reply shape. */
async function deviceWithScripts(names: string[]) {
  const own = await approvedDevice(app, { product_name: "edge-gateway", metadata: { name: "scripted" } });
  await queueCommand(app.database.sql, { deviceId: own.id, type: "list_scripts", ttlSeconds: 3600 });
  const reply = await heartbeat(app, own, agentHeartbeat({ cpu: 1, memory: 2, disk: 3 }));
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
  test("gauges and telemetry charts draw from real stored heartbeats", async () => {
    const samples = [
      { cpu: 12.5, memory: 41, disk: 62 },
      { cpu: 37, memory: 44.5, disk: 62.2 },
      { cpu: 81, memory: 47, disk: 62.4 },
    ];
    for (const sample of samples) await heartbeat(app, device, agentHeartbeat(sample));
    // Older heartbeats (stored as the API stored these) spread over the last hours.
    const stored = await app.database.sql<{ id: string }[]>`
      select id from telemetry_events where device_id = ${device.id}::uuid order by recorded_at`;
    await app.database
      .sql`update telemetry_events set recorded_at = recorded_at - interval '3 hours' where id = ${stored[0]!.id}::uuid`;
    await app.database
      .sql`update telemetry_events set recorded_at = recorded_at - interval '30 minutes' where id = ${stored[1]!.id}::uuid`;

    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}`);
    expect(await page.locator("h1").textContent()).toBe("pump-station-7");
    expect(await page.locator(".device-header .badge").allTextContents()).toEqual(["approved", "online"]);
    expect(await page.locator('.gauge svg[aria-label^="CPU"]').getAttribute("aria-label")).toBe("CPU: 81%");
    expect(await page.locator('.gauge svg[aria-label^="Memory"]').getAttribute("aria-label")).toBe(
      "Memory: 47%",
    );
    expect(await page.locator('.gauge svg[aria-label^="Disk"]').getAttribute("aria-label")).toBe(
      "Disk: 62.4%",
    );
    expect(await page.locator(".offline-banner").count()).toBe(0);
    // Metadata as labelled values: the agent's nested `os` object is not shown as JSON.
    const facts = await page.locator(".card", { hasText: "Metadata" }).locator("dl.facts").first();
    expect(await facts.locator("dt").allTextContents()).toEqual(
      expect.arrayContaining(["Hostname", "IP address", "OS › Platform", "OS › Release", "OS › Arch"]),
    );
    expect(await facts.textContent()).toContain("6.1.0-27-arm64");
    expect(await facts.textContent()).not.toContain("{");
    await screenshot(page, "console-device-overview");

    await page.click('nav.tabs a:has-text("Telemetry")');
    await page.waitForURL(/tab=telemetry/);
    await page.waitForSelector(".chart[data-drawn] canvas");
    const charts = await page.locator(".chart-card figcaption").allTextContents();
    expect(charts).toEqual(
      expect.arrayContaining(["cpu.usage_pct", "memory.used_pct", "disk.root_used_pct", "load.load_1m"]),
    );
    // The cpu chart holds the three stored samples (one of them 3 hours back).
    const cpuChart = page.locator(".chart-card", {
      has: page.locator("figcaption", { hasText: /^cpu\.usage_pct$/ }),
    });
    const spec = JSON.parse((await cpuChart.locator(".chart").getAttribute("data-chart"))!);
    const usage = spec.series
      .find((s: { label: string }) => s.label === "usage_pct")
      .values.filter((v: number | null) => v !== null);
    expect(usage).toEqual([12.5, 37, 81]);
    expect(Number(await cpuChart.locator(".chart").getAttribute("data-points"))).toBeGreaterThanOrEqual(3);
    expect(await page.locator("pre.json").textContent()).toContain('"usage_pct": 81');
    expect(await page.locator("#tab-panel .toolbar-row").textContent()).toContain("3 heartbeats in range");
    await screenshot(page, "console-device-telemetry");

    // A 1-hour range leaves the 3-hour-old sample out.
    await page.click('nav.segmented a:has-text("1 hour")');
    await page.waitForURL(/range=1h/);
    expect(await page.locator("#tab-panel .toolbar-row").textContent()).toContain("2 heartbeats in range");
    const hour = JSON.parse((await cpuChart.locator(".chart").getAttribute("data-chart"))!);
    const hourUsage = hour.series.find((s: { label: string }) => s.label === "usage_pct");
    expect(hourUsage.values.filter((v: number | null) => v !== null)).toEqual([37, 81]);
    await page.setViewportSize(PHONE);
    await page.goto(`${app.url}/devices/${device.id}?tab=telemetry`);
    await page.waitForSelector(".chart[data-drawn] canvas");
    await screenshot(page, "console-device-telemetry-phone");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await context.close();
  }, 60_000);

  test("list_scripts: queued in the UI, answered by one real agent poll, shown without reload", async () => {
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

    page.once("dialog", (dialog) => void dialog.accept());
    await queued.locator('button:has-text("Cancel")').click();
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("Command cancelled");
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
    const reply = await heartbeat(app, device, agentHeartbeat({ cpu: 10, memory: 40, disk: 62 }));
    const remove = reply.commands.find((c) => c.type === "remove_script") as { args: string[] } | undefined;
    expect(remove?.args).toEqual(["cpu"]);
    await page.reload();
    await screenshot(page, "console-device-commands");
    await page.setViewportSize(PHONE);
    await page.reload();
    await screenshot(page, "console-device-commands-phone");
    await context.close();
  }, 60_000);

  test("telemetry field picker: the first 12 by default, any others on request, kept across ranges", async () => {
    const wide = await approvedDevice(app, {
      product_name: "many-sensors",
      metadata: { name: "sensor-wall" },
    });
    const output: Record<string, number> = {};
    for (let i = 1; i <= 16; i++) output[`s${String(i).padStart(2, "0")}`] = i * 10;
    await heartbeat(app, wide, {
      telemetry: {
        scripts: {
          sensors: { data: { status: "success", validation_status: "valid", duration_ms: 2, output } },
        },
        meta: { collected_at: new Date().toISOString(), script_count: 1 },
      },
      connection_status: { active: false },
    });
    const context = await signedIn(browser, app, "viewer");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${wide.id}?tab=telemetry`);
    await page.waitForSelector(".chart[data-drawn] canvas");
    const first12 = Array.from({ length: 12 }, (_, i) => `sensors.s${String(i + 1).padStart(2, "0")}`);
    expect(await page.locator(".chart-card figcaption").allTextContents()).toEqual(first12);
    expect(await page.locator("#chart-fields summary").textContent()).toContain("12 of 16");
    // One heartbeat is one point: the time axis spans an hour around it, not years.
    expect(await page.locator(".chart[data-drawn]").first().getAttribute("data-x-span")).toBe("3600");
    expect(await page.locator('#chart-fields input[name="field"]').count()).toBe(16);

    // Pick two fields beyond the first 12 (and drop the rest): only those are charted.
    await page.click("#chart-fields summary");
    for (const label of first12) await page.uncheck(`#chart-fields input[value="${label}"]`);
    await page.check('#chart-fields input[value="sensors.s15"]');
    await page.check('#chart-fields input[value="sensors.s16"]');
    await page.click('#chart-fields button:has-text("Show charts")');
    await page.waitForURL(/field=sensors\.s16/);
    await page.waitForSelector(".chart[data-drawn] canvas");
    expect(await page.locator(".chart-card figcaption").allTextContents()).toEqual([
      "sensors.s15",
      "sensors.s16",
    ]);
    const s16 = page.locator(".chart-card", {
      has: page.locator("figcaption", { hasText: /^sensors\.s16$/ }),
    });
    const spec = JSON.parse((await s16.locator(".chart").getAttribute("data-chart"))!);
    expect(spec.series[0].values.filter((v: number | null) => v !== null)).toEqual([160]);
    expect(await page.locator("#chart-fields summary").textContent()).toContain("2 of 16");
    await screenshot(page, "console-device-telemetry-fields");

    // A range change keeps the pick; Reset returns to the first 12.
    await page.click('nav.segmented a:has-text("7 days")');
    await page.waitForURL(/range=7d/);
    expect(await page.locator(".chart-card figcaption").allTextContents()).toEqual([
      "sensors.s15",
      "sensors.s16",
    ]);
    await page.click('#chart-fields a:has-text("Reset")');
    await page.waitForURL((url) => !url.search.includes("field="));
    expect(await page.locator(".chart-card figcaption").count()).toBe(12);
    await context.close();
  }, 60_000);

  test("telemetry tab: range from the data there is; installed scripts and measurements charted first", async () => {
    const fresh = await approvedDevice(app, { product_name: "edge-gateway" });
    const body = agentHeartbeat({ cpu: 12, memory: 40, disk: 50 });
    const scripts = body.telemetry.scripts as Record<string, unknown>;
    (scripts.cpu as { data: { output: Record<string, unknown> } }).data.output.interval_ms = 30_000;
    scripts["fan-speed"] = {
      data: { status: "success", validation_status: "valid", duration_ms: 2, output: { rpm: 1200 } },
    };
    await heartbeat(app, fresh, body);
    const context = await signedIn(browser, app, "operator");
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${fresh.id}?tab=telemetry`);
    // Ten seconds of data: the last hour, not a dot at 24 hours.
    expect(await page.locator('nav.segmented a[aria-current="true"]').textContent()).toBe("1 hour");
    const charted = await page.locator(".chart-card figcaption").allTextContents();
    expect(charted[0]).toBe("fan-speed.rpm");
    expect(charted.indexOf("cpu.usage_pct")).toBeLessThan(charted.indexOf("cpu.cores"));
    expect(charted.slice(-3).sort()).toEqual(["cpu.cores", "cpu.interval_ms", "memory.total_bytes"]);
    // Data from three hours back: the 6-hour range holds it all.
    await app.database.sql`update telemetry_events set recorded_at = now() - interval '3 hours'
      where device_id = ${fresh.id}::uuid`;
    await heartbeat(app, fresh, agentHeartbeat({ cpu: 14, memory: 41, disk: 50 }));
    await page.goto(`${app.url}/devices/${fresh.id}?tab=telemetry`);
    expect(await page.locator('nav.segmented a[aria-current="true"]').textContent()).toBe("6 hours");
    // A range chosen by the operator stays chosen.
    await page.goto(`${app.url}/devices/${fresh.id}?tab=telemetry&range=7d`);
    expect(await page.locator('nav.segmented a[aria-current="true"]').textContent()).toBe("7 days");
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
