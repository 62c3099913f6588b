// Every HTML page of the console, taken from the app's route table (a new page is covered without
// touching this file), opened in Chromium at laptop and phone width: it answers 200, the page itself
// never scrolls sideways at 390 px, no tab or filter is out of view, and the Content-Security-Policy refuses nothing (no inline script,
// no eval). Screenshots of each land in artifacts/screenshots/pages/.
import { describe, expect, test } from "bun:test";
import type { BrowserContext, Page } from "playwright-core";
import { buildApp } from "../../app";
import { createLogger } from "../../modules/platform/logger";
import { createServices } from "../../services";
import { signedIn } from "../console/helpers";
import { LAPTOP, launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { oidcEnv, startTestProvider } from "../oidc/provider";
import { seededConsole } from "./seeded-console";

// Single sign-on configured against a real provider, so its pages (link, signed out) are pages here too.
const provider = await startTestProvider("http://127.0.0.1:9");
const { app, device, ruleId, alertId, reportId, terminalSessionId, rolloutId } = await seededConsole(
  oidcEnv(provider),
);
const browser = await launchBrowser();

/** Values for path parameters (by route, else by name); a page with a parameter left unfilled fails. */
const ROUTE_PARAMS: Record<string, Record<string, string>> = {
  "/alerts/:id": { id: alertId },
  "/alerts/:id/edit": { id: ruleId },
  "/reports/:id": { id: reportId },
  "/reports/:id/edit": { id: reportId },
  "/reports/:id/delete": { id: reportId },
  "/terminal/sessions/:id": { id: terminalSessionId },
  "/rollouts/:id": { id: rolloutId },
  "/rollouts/:id/progress": { id: rolloutId },
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
  ...createServices(app.config, app.database, createLogger("silent")),
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

/** A tab that collects the Content-Security-Policy refusals of whatever it shows. */
async function openTab(context: BrowserContext) {
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
  return { page, refused };
}

/** Opens `url` in `tab` (its refusals from then on), and measures the page's sideways overflow. */
async function visit(tab: Awaited<ReturnType<typeof openTab>>, url: string) {
  const { page, refused } = tab;
  refused.length = 0;
  const response = await page.goto(url, { waitUntil: "load" });
  // Deferred scripts have run by `load`; what htmx fetches on load (the device page's alerts panel)
  // must be in and swapped before the page is measured. The refusals are read after the screenshot.
  await page.waitForFunction(() => !document.querySelector(".htmx-request, .htmx-swapping, .htmx-settling"));
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
  return { status: response?.status(), overflow, clipped };
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
      // Two tabs at a time, each going from page to page: most of a visit is waiting (load, settle,
      // screenshot), not CPU.
      const visitor = async () => {
        const tabs = new Map<BrowserContext, Awaited<ReturnType<typeof openTab>>>();
        for (let next = visits.shift(); next; next = visits.shift()) {
          const { path, variant } = next;
          const url = `${app.url}${fill(path)}${variant}`;
          const context = ANONYMOUS.has(path) ? anonymous : admin;
          const tab = tabs.get(context) ?? (await openTab(context));
          tabs.set(context, tab);
          const { status, overflow, clipped } = await visit(tab, url);
          const label = `${path}${variant}`;
          if (status !== 200) problems.push(`${label}: HTTP ${status}`);
          if (width === "phone" && overflow > 0) problems.push(`${label}: scrolls sideways by ${overflow}px`);
          if (clipped.length > 0) problems.push(`${label}: out of view: ${clipped.join(", ")}`);
          const name = `${label.replace(/[/:?=]+/g, "-").replace(/^-|-$/g, "") || "dashboard"}-${width}`;
          await screenshot(tab.page, `pages/${name}`);
          // Read last, so a refusal reported late (after a swap) still counts.
          if (tab.refused.length > 0) problems.push(`${label}: CSP refused ${tab.refused.join(" | ")}`);
        }
        for (const tab of tabs.values()) await tab.page.close();
      };
      await Promise.all([visitor(), visitor()]);
      await admin.close();
      await anonymous.close();
      expect(problems).toEqual([]);
    }, 120_000);
  }
});
