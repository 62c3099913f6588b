// Every HTML page of the console, taken from the app's route table (a new page is covered without
// touching this file), opened in Chromium at laptop and phone width: it answers 200, the page itself
// never scrolls sideways at 390 px, no tab or filter is out of view, and the Content-Security-Policy refuses nothing (no inline script,
// no eval). Screenshots of each land in artifacts/screenshots/pages/.
import { describe, expect, test } from "bun:test";
import type { BrowserContext, Page } from "playwright-core";
import { buildApp } from "../../app";
import { checkOfflineDevices } from "../../modules/alerts/evaluation";
import { queueCommand, recordCommandResults } from "../../modules/commands/service";
import { createLogger } from "../../modules/platform/logger";
import { Recorder } from "../../modules/terminal/recording";
import { endSession, startSession } from "../../modules/terminal/service";
import { sensorDevice } from "../alerts/helpers";
import { agentHeartbeat, approvedDevice, heartbeat, registerDevice, signedIn } from "../console/helpers";
import { startE2EApp, writeE2EFixture } from "../e2e/fixtures";
import { LAPTOP, launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { markSeen } from "../helpers/seen";
import { oidcEnv, startTestProvider } from "../oidc/provider";

// Single sign-on configured against a real provider, so its pages (link, signed out) are pages here too.
const provider = await startTestProvider("http://127.0.0.1:9");
const app = await startE2EApp(writeE2EFixture(), oidcEnv(provider));
const browser = await launchBrowser();

// A fleet with something on every page: an approved device with telemetry and a command, a pending one.
const device = await approvedDevice(app, {
  product_name: "edge-gateway-with-a-rather-long-product-name",
  metadata: { name: "pump-station-7-north-east-wing", os: { platform: "linux", release: "6.1.0-27-amd64" } },
});
await heartbeat(app, device, await agentHeartbeat({ cpu: 41, memory: 63, disk: 72 }));
await queueCommand(app.database.sql, {
  deviceId: device.id,
  type: "install_script",
  payload: {
    name: "fan-speed",
    data: "/*---\nname: fan-speed\nschema:\n  type: object\n---*/\nfunction main() { return {}; }\n",
  },
  ttlSeconds: 3600,
});
// …and a result for no command, as the agent posts for a command that came without an id.
await recordCommandResults(app.database.sql, device.id, [
  { command_id: "", status: "FAILED", error: "missing_command_id" },
]);
await registerDevice(app, { product_name: "edge-gateway" });

// An alert rule and an offline alert (a sensor silent for an hour).
const sensor = await sensorDevice(app, "every-page-sensor");
const ruleResponse = await app.fetch("/api/json/alert_rules", {
  method: "POST",
  headers: {
    authorization: `Bearer ${await app.token("operator")}`,
    "content-type": "application/vnd.api+json",
  },
  body: JSON.stringify({
    data: {
      type: "alert_rule",
      attributes: {
        name: "Hot sensor",
        product_name: "every-page-sensor",
        schema_version: sensor.agent.schema().version,
        condition_field: "sensor.temp",
        operator: ">",
        threshold_value: "50",
      },
    },
  }),
});
const ruleId = String(((await ruleResponse.json()) as { data: { id: string } }).data.id);
await markSeen(app.database.sql, sensor.id, 3600);
await checkOfflineDevices(app.database.sql, app.config);
const [alert] = await app.database.sql<{ id: string }[]>`select id::text from alerts limit 1`;

// A custom report over the sensors' temperature.
const reportResponse = await app.fetch("/api/v1/reports", {
  method: "POST",
  headers: { authorization: `Bearer ${await app.token("operator")}`, "content-type": "application/json" },
  body: JSON.stringify({
    name: "Sensor temperatures",
    config: {
      schema_id: null,
      fields: [{ path: "sensor.temp", alias: "temperature" }],
      range: { preset: "24h" },
    },
  }),
});
if (reportResponse.status !== 201)
  throw new Error(`report: ${reportResponse.status} ${await reportResponse.text()}`);
const reportId = ((await reportResponse.json()) as { data: { id: string } }).data.id;

// A recorded terminal session on the device (its playback page), ended.
const terminalOperator = await app.session("operator");
const terminal = await startSession(app.database.sql, {
  deviceId: device.id,
  operator: { operatorId: terminalOperator.operatorId, email: terminalOperator.email },
  secretKey: app.config.secretKey,
  limits: { idleSeconds: 600, maxSeconds: 3600 },
  remoteAccessMaxMinutes: 60,
  onlineWindowSeconds: 300,
});
const recorder = new Recorder(app.database.sql, terminal.sessionId, {
  columns: 80,
  rows: 24,
  title: "every-page",
  recordsInput: false,
});
recorder.output("root@pump-station-7:~# uptime\r\n 10:00:00 up 3 days,  load average: 0.10, 0.20, 0.30\r\n");
await recorder.close();
await endSession(app.database.sql, terminal.sessionId, "exit", 0);

/** Values for path parameters (by route, else by name); a page with a parameter left unfilled fails. */
const ROUTE_PARAMS: Record<string, Record<string, string>> = {
  "/alerts/:id": { id: alert!.id },
  "/alerts/:id/edit": { id: ruleId },
  "/reports/:id": { id: reportId },
  "/reports/:id/edit": { id: reportId },
  "/reports/:id/delete": { id: reportId },
  "/terminal/sessions/:id": { id: terminal.sessionId },
};
const PARAMS: Record<string, string> = { id: device.id, deviceId: device.id };
/** Extra variants of a page (tabs). */
const VARIANTS: Record<string, string[]> = {
  "/devices/:id": ["", "?tab=telemetry", "?tab=scripts", "?tab=commands", "?tab=remote", "?tab=terminal"],
};
/** Pages shown to visitors who are not signed in (a signed-in operator is sent on from them). */
const ANONYMOUS = new Set(["/login", "/setup", "/auth/oidc/signed-out"]);
/** GET routes that are not pages: APIs, streams, assets, probes, redirects to and from the OpenID provider. */
const NOT_PAGES =
  /^\/(api|e2e\/|live|assets|static|healthz|readyz|metrics|favicon|logout|downloads\/|auth\/oidc\/(login|callback))|\/live$|\.(js|csv|cast|sh)$/;

const pages = buildApp({
  config: app.config,
  database: app.database,
  logger: createLogger("silent"),
  workerRunning: () => true,
})
  .routes.filter((route) => route.method === "GET" && !NOT_PAGES.test(route.path))
  .map((route) => route.path);

function fill(path: string): string | undefined {
  let missing = false;
  const values = { ...PARAMS, ...ROUTE_PARAMS[path] };
  const filled = path.replace(/:(\w+)/g, (_, name: string) => {
    if (values[name] === undefined) missing = true;
    return values[name] ?? "";
  });
  return missing ? undefined : filled;
}

/** Opens `url`, collecting CSP refusals, and measures the page's sideways overflow. */
async function visit(context: BrowserContext, url: string) {
  const page: Page = await context.newPage();
  const refused: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/.test(message.text())) refused.push(message.text());
  });
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      console.error(`Refused to ${event.violatedDirective}: ${event.blockedURI} (Content Security Policy)`);
    });
  });
  const response = await page.goto(url, { waitUntil: "load" });
  // Deferred scripts and htmx settle; a refusal after load still reaches `refused`.
  await page.waitForTimeout(150);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  // Tabs, filters and chips out of view (scrolled away inside their bar, or past the screen's edge).
  const clipped = await page.evaluate(() => {
    const hidden: string[] = [];
    for (const el of Array.from(document.querySelectorAll(".tabs a, .segmented a, .chips a, .chip"))) {
      const rect = el.getBoundingClientRect();
      if (rect.width === 0) continue;
      let outside = rect.right > window.innerWidth + 1 || rect.left < -1;
      for (let parent = el.parentElement; parent && !outside; parent = parent.parentElement) {
        if (getComputedStyle(parent).overflowX === "visible") continue;
        const box = parent.getBoundingClientRect();
        outside = rect.right > box.right + 1 || rect.left < box.left - 1;
      }
      if (outside) hidden.push((el.textContent ?? "").trim());
    }
    return hidden;
  });
  return { page, status: response?.status(), refused, overflow, clipped };
}

describe("every console page", () => {
  test("the route table yields the pages, each with values for its parameters", () => {
    expect(pages).toEqual(expect.arrayContaining(["/", "/devices", "/devices/:id", "/settings", "/jobs"]));
    expect(pages.filter((path) => fill(path) === undefined)).toEqual([]);
  });

  for (const [width, viewport] of [
    ["laptop", LAPTOP],
    ["phone", PHONE],
  ] as const) {
    test(`at ${width} width: 200, no sideways scroll, nothing refused by the CSP`, async () => {
      const admin = await signedIn(browser, app, "admin", viewport);
      const anonymous = await browser.newContext({ viewport });
      const problems: string[] = [];
      const visits = pages.flatMap((path) => (VARIANTS[path] ?? [""]).map((variant) => ({ path, variant })));
      // Two pages at a time: most of a visit is waiting (load, settle, screenshot), not CPU.
      const visitor = async () => {
        for (let next = visits.shift(); next; next = visits.shift()) {
          const { path, variant } = next;
          const url = `${app.url}${fill(path)}${variant}`;
          const { page, status, refused, overflow, clipped } = await visit(
            ANONYMOUS.has(path) ? anonymous : admin,
            url,
          );
          const label = `${path}${variant}`;
          if (status !== 200) problems.push(`${label}: HTTP ${status}`);
          if (refused.length > 0) problems.push(`${label}: CSP refused ${refused.join(" | ")}`);
          if (width === "phone" && overflow > 0) problems.push(`${label}: scrolls sideways by ${overflow}px`);
          if (clipped.length > 0) problems.push(`${label}: out of view: ${clipped.join(", ")}`);
          const name = `${label.replace(/[/:?=]+/g, "-").replace(/^-|-$/g, "") || "dashboard"}-${width}`;
          await screenshot(page, `pages/${name}`);
          await page.close();
        }
      };
      await Promise.all([visitor(), visitor()]);
      await admin.close();
      await anonymous.close();
      expect(problems).toEqual([]);
    }, 120_000);
  }
});
