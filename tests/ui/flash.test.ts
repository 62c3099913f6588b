/**
 * A flash message (ui/flash.ts) is shown once, by the page a person lands on: a background htmx
 * request that comes between a form's redirect and that page (a live refresh, a poll) must not eat it.
 */
import { describe, expect, test } from "bun:test";
import { clearFlashCookie, flashCookie } from "../../ui/flash";
import { approvedDevice } from "../console/helpers";
import { startTestApp } from "../helpers/app";

const app = await startTestApp();
const device = await approvedDevice(app);
// The device page's live refresh of its Scripts tab: the whole page, of which the browser keeps the tab.
const PAGE = `/devices/${device.id}?tab=scripts`;

const TEXT = 'Install of "cpu" queued · ✓ 🚀';

async function withFlash(headers: Record<string, string> = {}) {
  const session = await app.session("operator");
  const flash = flashCookie({ kind: "success", text: TEXT }, false).split(";")[0];
  return app.fetch(PAGE, { headers: { cookie: `${session.cookie}; ${flash}`, ...headers } });
}

const clearsFlash = (response: Response) => response.headers.getSetCookie().includes(clearFlashCookie(false));

describe("flash messages", () => {
  test("a background htmx request neither shows nor clears the flash", async () => {
    const refresh = await withFlash({
      "hx-request": "true",
      "hx-target": "tab-panel",
      "hx-current-url": `${app.url}${PAGE}`,
    });
    expect(refresh.status).toBe(200);
    expect(clearsFlash(refresh)).toBe(false);
    expect(await refresh.text()).not.toContain("flash success");
  });

  test("the page navigated to shows it, escaped, and clears it (also when htmx boosts the navigation)", async () => {
    const navigations: Record<string, string>[] = [{}, { "hx-request": "true", "hx-boosted": "true" }];
    for (const headers of navigations) {
      const page = await withFlash(headers);
      expect(page.status).toBe(200);
      expect(clearsFlash(page)).toBe(true);
      const html = await page.text();
      expect(html).toContain('class="flash success"');
      expect(html).toContain("Install of &quot;cpu&quot; queued · ✓ 🚀");
    }
  });
});
