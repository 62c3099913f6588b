// Pages a newcomer meets first, in Chromium at 390 px: what they need is on the screen and in the order
// it is explained. Jobs: no table scrolls sideways and every "Run now" is within the screen. Alerts:
// "No open alerts" stands clear of the buttons. Reports: the name filter's placeholder is not cut.
// Add device: the heading that explains pre-registration comes before its MAC form. Screenshots land
// in artifacts/screenshots/phone/.
import { afterAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { signedIn } from "../console/helpers";
import { startTestApp } from "../helpers/app";
import { launchBrowser, PHONE, screenshot } from "../helpers/browser";

const app = await startTestApp();
const browser = await launchBrowser();
const context = await signedIn(browser, app, "admin", PHONE);
afterAll(() => context.close());

async function open(pathname: string, name: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${app.url}${pathname}`, { waitUntil: "load" });
  await screenshot(page, `phone/${name}`);
  return page;
}

/** How far the page itself scrolls sideways (0: it fits). */
const pageOverflow = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

/** Elements matching `selector` that scroll sideways inside themselves. */
const sidewaysScrollers = (page: Page, selector: string) =>
  page.evaluate(
    (sel) =>
      Array.from(document.querySelectorAll(sel))
        .filter((el) => el.scrollWidth > el.clientWidth + 1)
        .map((el) => el.id || el.className),
    selector,
  );

describe("first pages at 390 px", () => {
  test("Jobs: no table scrolls sideways; every Run now is on the screen", async () => {
    const page = await open("/jobs", "jobs");
    expect(await pageOverflow(page)).toBe(0);
    expect(await sidewaysScrollers(page, ".table-wrap")).toEqual([]);
    const buttons = page.getByRole("button", { name: "Run now" });
    const count = await buttons.count();
    expect(count).toBeGreaterThan(3);
    for (let i = 0; i < count; i++) {
      const box = (await buttons.nth(i).boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
    }
    await page.close();
  });

  test("Alerts: 'No open alerts' stands at least 8 px clear of the buttons", async () => {
    const page = await open("/alerts", "alerts");
    expect(await pageOverflow(page)).toBe(0);
    const overlaps = await page.evaluate(() => {
      const text = Array.from(document.querySelectorAll("td, p, div")).find(
        (el) => el.children.length === 0 && el.textContent?.includes("No open alerts"),
      );
      if (!text) return ["no empty-state text"];
      const range = document.createRange();
      range.selectNodeContents(text);
      const lines = Array.from(range.getClientRects());
      // Every button above or below the text, in the same columns, is at least 8 px away from it.
      const hits: string[] = [];
      for (const button of Array.from(document.querySelectorAll("button, a.btn"))) {
        const b = button.getBoundingClientRect();
        if (b.width === 0) continue;
        for (const r of lines) {
          const sideBySide = r.right <= b.left || b.right <= r.left;
          const gap = Math.max(r.top - b.bottom, b.top - r.bottom);
          if (!sideBySide && gap < 8)
            hits.push(`${(button.textContent ?? "").trim()} (${Math.round(gap)} px)`);
        }
      }
      return hits;
    });
    expect(overlaps).toEqual([]);
    await page.close();
  });

  test("Reports: the name filter's placeholder fits its box", async () => {
    const page = await open("/reports", "reports");
    expect(await pageOverflow(page)).toBe(0);
    const fit = await page.evaluate(() => {
      const input = document.querySelector<HTMLInputElement>('input[name="q"], input[type="search"]');
      if (!input) return { found: false, need: 0, have: 0 };
      const style = getComputedStyle(input);
      const canvas = document.createElement("canvas").getContext("2d")!;
      canvas.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      const need = canvas.measureText(input.placeholder).width;
      const have = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      return { found: true, need, have };
    });
    expect(fit.found).toBe(true);
    expect(fit.need).toBeLessThanOrEqual(fit.have);
    await page.close();
  });

  test("Add device: the pre-registration heading comes before the MAC form", async () => {
    const page = await open("/devices/new", "add-device");
    expect(await pageOverflow(page)).toBe(0);
    const heading = (await page.getByRole("heading", { name: /pre-register/i }).boundingBox())!;
    const mac = (await page.getByLabel("MAC address").boundingBox())!;
    expect(heading.y + heading.height).toBeLessThanOrEqual(mac.y);
    await page.close();
  });
});
