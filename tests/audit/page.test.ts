// The audit page in Chromium: admins reach it from the nav (operators neither see the link nor get
// the page), filter by who/action/target/time through the form, page back by keyset ("Older"),
// download the filtered CSV, and read it at laptop and phone width (no sideways scroll, markup in
// recorded values shown as text). Screenshots: artifacts/screenshots/audit-*.png.
import { describe, expect, test } from "bun:test";
import path from "node:path";
import type { BrowserContext } from "playwright-core";
import { recordAudit } from "../../modules/audit/service";
import { register } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser, PHONE, SCREENSHOT_DIR, screenshot } from "../helpers/browser";

const app = await startTestApp();
const browser = await launchBrowser();
const admin = await app.session("admin");
const operator = await app.session("operator");

// Real events (an operator approving devices over HTTP), and enough others for a second page.
const devices = [(await register(app)).body.data.id, (await register(app)).body.data.id];
for (const id of devices) {
  const response = await app.fetch(`/devices/${id}/approve`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: operator.cookie },
    body: new URLSearchParams({ _csrf: operator.csrf }).toString(),
  });
  if (response.status !== 303) throw new Error(`approve answered ${response.status}`);
}
for (let i = 0; i < 60; i++) {
  await recordAudit(app.database, {
    actorKind: "token",
    actor: "token nightly-sync",
    action: "device.update",
    target: `device:${crypto.randomUUID()}`,
    status: i % 10 === 0 ? 403 : 200,
    address: "192.0.2.7",
    details: { product_name: `sensor-${i}` },
  });
}
const MARKUP = '<img src=x onerror="window.__pwned=1">';
await recordAudit(app.database, {
  actorKind: "anonymous",
  actor: `${MARKUP}@example.test`,
  action: "session.sign_in_failed",
  status: 401,
  address: "198.51.100.9",
});
// The approvals are written after their answers: wait until the recorder is done (bounded).
if (!(await app.services.auditWrites.settled())) throw new Error("the approvals' audit writes never ended");

async function signedIn(session: { cookie: string }, viewport = LAPTOP): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const [name, value] = session.cookie.split("=");
  await context.addCookies([{ name: name!, value: value!, url: app.url }]);
  return context;
}

describe("the audit page in Chromium", () => {
  test("admins: nav link, filters, older pages, CSV of the filtered events; no CSP refusal", async () => {
    const context = await signedIn(admin);
    const page = await context.newPage();
    const refused: string[] = [];
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) refused.push(message.text());
    });
    await page.goto(`${app.url}/`);
    await page.click('nav a[href="/audit"]');
    await page.waitForURL(/\/audit$/);
    expect(await page.locator("h1").textContent()).toBe("Audit log");
    // Newest first, a page of 50, and a way back to older events.
    expect(await page.locator("table tbody tr").count()).toBe(50);
    // Markup someone typed as an email is text on the page, never an element.
    const typed = page.locator("table tbody tr", { hasText: "session.sign_in_failed" });
    expect(await typed.textContent()).toContain(MARKUP);
    expect(await page.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
    await screenshot(page, "audit-laptop");

    // Filter by action through the form.
    await page.fill('input[name="action"]', "device.approve");
    await page.click('form.audit-filters button[type="submit"]');
    await page.waitForURL(/action=device\.approve/);
    const approvals = page.locator("table tbody tr");
    expect(await approvals.count()).toBe(2);
    for (const text of await approvals.allTextContents()) {
      expect(text).toContain(operator.email);
      expect(text).toContain("done · 303");
    }
    // The Details column reads as what happened: one line a fact, a change as before → after.
    const details = approvals.first().locator("ul.audit-details li");
    expect(await details.allTextContents()).toEqual(["approval_status: pending → approved"]);
    await screenshot(page, "audit-laptop-filtered");
    const targets = (await approvals.allTextContents()).join(" ");
    for (const id of devices) expect(targets).toContain(`device:${id}`);
    expect(await page.locator('a:has-text("Older")').count()).toBe(0);

    // Filter by who and target together.
    await page.goto(
      `${app.url}/audit?actor=${encodeURIComponent(operator.email)}&target=device:${devices[0]}`,
    );
    expect(await page.locator("table tbody tr").count()).toBe(1);

    // A time window that holds nothing.
    await page.goto(`${app.url}/audit`);
    await page.fill('input[name="to"]', "2001-01-01T00:00");
    await page.click('form.audit-filters button[type="submit"]');
    await page.waitForURL(/to=2001-01-01T00%3A00/);
    expect(await page.locator("text=Nothing recorded").count()).toBe(1);

    // Keyset pages: the older page continues where the first stopped, no row twice.
    await page.goto(`${app.url}/audit?actor=${encodeURIComponent("token nightly-sync")}`);
    const first = await page.locator("table tbody tr").allTextContents();
    expect(first).toHaveLength(50);
    await page.click('a:has-text("Older")');
    await page.waitForURL(/cursor=/);
    const second = await page.locator("table tbody tr").allTextContents();
    expect(second).toHaveLength(10);
    expect(new URL(page.url()).searchParams.get("actor")).toBe("token nightly-sync");
    const names = (rows: string[]) => rows.map((row) => /sensor-\d+/.exec(row)![0]);
    expect(new Set([...names(first), ...names(second)]).size).toBe(60);

    // The CSV button carries the filters: every matching event, not just this page.
    await page.goto(`${app.url}/audit?actor=${encodeURIComponent("token nightly-sync")}`);
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export-audit-csv")]);
    const csv = await Bun.file((await download.path())!).text();
    const lines = csv.trimEnd().split("\r\n");
    expect(lines[0]).toBe("at,actor_kind,actor,action,target,status,address,details,id");
    expect(lines).toHaveLength(61);
    expect(lines.slice(1).every((line) => line.includes(",token nightly-sync,device.update,"))).toBe(true);
    expect(refused).toEqual([]);
    await context.close();
  });

  test("at 1366 px the table fits its card: long targets, emails and details wrap (issue 42)", async () => {
    // What the app records with the longest values: a bulk action's ids, a lease's end.
    const ids = Array.from({ length: 20 }, () => crypto.randomUUID());
    await recordAudit(app.database, {
      actorKind: "operator",
      actor: "a-rather-long-operator-name@operations.example.test",
      action: "device.bulk",
      status: 303,
      address: "2001:db8:85a3::8a2e:370:7334",
      details: { action: "approve", ids },
    });
    await recordAudit(app.database, {
      actorKind: "operator",
      actor: "a-rather-long-operator-name@operations.example.test",
      action: "remote_access.end",
      target: `device:${crypto.randomUUID()}`,
      status: 200,
      details: {
        lease_id: crypto.randomUUID(),
        owner: "console",
        reason: "operator_closed",
        ended_by: "a-rather-long-operator-name@operations.example.test",
      },
    });
    const context = await signedIn(admin, LAPTOP);
    const page = await context.newPage();
    await page.goto(`${app.url}/audit`);
    await page.locator("table tbody tr").first().waitFor();
    const sizes = await page.evaluate(() => {
      const wrap = document.querySelector("main .table-wrap") as HTMLElement;
      const table = wrap.querySelector("table") as HTMLElement;
      return { table: table.scrollWidth, box: wrap.clientWidth };
    });
    expect(sizes.table).toBeLessThanOrEqual(sizes.box);
    // Every id of the bulk action is on the page, readable.
    const bulk = (await page.locator("table tbody tr", { hasText: "device.bulk" }).textContent()) ?? "";
    for (const id of ids) expect(bulk).toContain(id);
    // The first screenful (the newest rows): the full page is 60 rows more.
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, "audit-laptop-long-details.png") });
    await context.close();
  });

  test("at phone width: rows stack, nothing scrolls sideways", async () => {
    const context = await signedIn(admin, PHONE);
    const page = await context.newPage();
    await page.goto(`${app.url}/audit`);
    expect(await page.locator("table tbody tr").count()).toBe(50);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, "audit-phone");
    await page.goto(`${app.url}/audit?action=device.approve`);
    expect(await page.locator("table tbody tr").count()).toBe(2);
    await screenshot(page, "audit-phone-filtered");
    await context.close();
  });

  test("operators: no nav link, and the page answers 403", async () => {
    const context = await signedIn(operator);
    const page = await context.newPage();
    await page.goto(`${app.url}/`);
    expect(await page.locator('nav a[href="/audit"]').count()).toBe(0);
    const response = await page.goto(`${app.url}/audit`);
    expect(response!.status()).toBe(403);
    const csv = await app.fetch("/audit.csv", { headers: { cookie: operator.cookie } });
    expect(csv.status).toBe(403);
    await context.close();
  });
});
