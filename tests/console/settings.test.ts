// Settings in real Chromium: monitoring values stored in PostgreSQL (and used by the device API),
// notification validation (HTTPS, public addresses only, stored URL never shown), operators.
import { describe, expect, test } from "bun:test";
import { validateWebhookUrl } from "../../modules/settings/webhook";
import { form, startTestApp } from "../helpers/app";
import { launchBrowser, PHONE, screenshot } from "../helpers/browser";
import { signedIn } from "./helpers";

const app = await startTestApp();
const browser = await launchBrowser();

describe("settings", () => {
  test("monitoring: inline errors keep the input; saved values override the env defaults", async () => {
    const context = await signedIn(browser, app, "admin");
    const page = await context.newPage();
    await page.goto(`${app.url}/settings`);
    expect(await page.inputValue('input[name="online_window_minutes"]')).toBe("5");
    expect(await page.inputValue('input[name="telemetry_retention_days"]')).toBe("30");
    await page.fill('input[name="online_window_minutes"]', "1.5");
    await page.fill('input[name="offline_alert_minutes"]', "0");
    await page.fill('input[name="telemetry_retention_days"]', "90");
    await page.click('button:has-text("Save monitoring settings")');
    const errors = await page.locator("#monitoring .field-error").allTextContents();
    expect(errors).toEqual([
      "The online window must be a whole number.",
      "The offline-alert window must be between 1 and 10080.",
    ]);
    expect(await page.inputValue('input[name="online_window_minutes"]')).toBe("1.5");
    expect(await page.inputValue('input[name="telemetry_retention_days"]')).toBe("90");
    await screenshot(page, "console-settings-errors");
    expect((await app.services.settings.device()).telemetryRetentionDays).toBe(30);

    await page.fill('input[name="online_window_minutes"]', "2");
    await page.fill('input[name="offline_alert_minutes"]', "15");
    await page.click('button:has-text("Save monitoring settings")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toBe("Monitoring settings saved.");
    expect(await page.inputValue('input[name="offline_alert_minutes"]')).toBe("15");
    // Seen at once by the process that saved (its cache held the value read above).
    const settings = await app.services.settings.device();
    expect(settings.onlineWindowSeconds).toBe(120);
    expect(settings.telemetryRetentionDays).toBe(90);
    await context.close();
  }, 60_000);

  test("notifications: http:// and private-address webhooks are refused; the stored URL is never shown", async () => {
    const context = await signedIn(browser, app, "admin");
    const page = await context.newPage();
    await page.goto(`${app.url}/settings`);
    for (const [url, message] of [
      ["http://hooks.example.com/outpost", "must start with https://"],
      ["https://10.1.2.3/hook", "private or reserved address"],
      ["https://127.0.0.1:8443/hook", "private or reserved address"],
      ["https://[::1]/hook", "private or reserved address"],
      ["https://169.254.169.254/latest", "private or reserved address"],
      ["https://localhost/hook", "private or reserved address"],
    ] as const) {
      await page.fill('input[name="notification_email"]', "ops@example.com");
      await page.fill('input[name="webhook_url"]', url);
      await page.click('button:has-text("Save notification settings")');
      expect({ url, error: await page.locator("#notifications .field-error").textContent() }).toEqual({
        url,
        error: expect.stringContaining(message),
      });
      expect(await page.inputValue('input[name="webhook_url"]')).toBe(url);
      expect(await page.inputValue('input[name="notification_email"]')).toBe("ops@example.com");
    }
    await screenshot(page, "console-settings-webhook-refused");

    // A public address literal needs no DNS.
    const secret = "https://93.184.216.34/hooks/outpost?token=s3cr3t-value";
    await page.fill('input[name="webhook_url"]', secret);
    await page.click('button:has-text("Save notification settings")');
    await page.waitForSelector(".flash.success");
    const html = await page.content();
    expect(html).not.toContain("s3cr3t-value");
    expect(html).not.toContain("93.184.216.34");
    expect(await page.locator("#notifications").textContent()).toContain("A webhook is configured");
    expect(await page.inputValue('input[name="notification_email"]')).toBe("ops@example.com");

    // Blank keeps it; the checkbox removes it.
    await page.click('button:has-text("Save notification settings")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator("#notifications").textContent()).toContain("A webhook is configured");
    await page.check('input[name="clear_webhook"]');
    await page.click('button:has-text("Save notification settings")');
    await page.waitForSelector(".flash.success");
    expect(await page.locator("#notifications").textContent()).not.toContain("A webhook is configured");
    await context.close();
  }, 60_000);

  test("webhook validation resolves names and rejects any private answer", async () => {
    const resolveTo = (addresses: string[]) => async () => addresses;
    expect(await validateWebhookUrl("https://hooks.example.com/x", resolveTo(["93.184.216.34"]))).toEqual({
      url: "https://hooks.example.com/x",
    });
    for (const addresses of [
      ["93.184.216.34", "10.0.0.1"],
      ["192.168.1.1"],
      ["::ffff:127.0.0.1"],
      ["fd00::1"],
      ["100.64.1.1"],
    ]) {
      expect(await validateWebhookUrl("https://hooks.example.com/x", resolveTo(addresses))).toHaveProperty(
        "error",
      );
    }
    const failing = async () => {
      throw new Error("ENOTFOUND");
    };
    expect(await validateWebhookUrl("https://nowhere.invalid/x", failing)).toEqual({
      error: expect.stringContaining("could not be resolved"),
    });
  });

  test("operators: create shows the password once, change role, disable signs them out", async () => {
    const context = await signedIn(browser, app, "admin");
    const page = await context.newPage();
    await page.goto(`${app.url}/settings`);
    await page.fill('#operators input[name="email"]', "not-an-email");
    await page.click('button:has-text("Add operator")');
    expect(await page.locator("#operators .field-error").textContent()).toBe("Enter a valid email address");
    expect(await page.inputValue('#operators input[name="email"]')).toBe("not-an-email");
    await page.fill('#operators input[name="email"]', "night-shift@example.test");
    await page.selectOption('#operators select[name="role"]', "operator");
    await page.click('button:has-text("Add operator")');
    const password = (await page.locator("#new-operator-password").textContent())!.trim();
    expect(password.length).toBeGreaterThanOrEqual(15);
    await screenshot(page, "console-settings-operator-created");

    // The new operator signs in with it.
    const login = await browser.newContext();
    const loginPage = await login.newPage();
    await loginPage.goto(`${app.url}/login`);
    await loginPage.fill('input[name="email"]', "night-shift@example.test");
    await loginPage.fill('input[name="password"]', password);
    await loginPage.click('button[type="submit"]');
    await loginPage.waitForURL(`${app.url}/`);

    await page.goto(`${app.url}/settings`);
    const row = page.locator("#operators tbody tr", { hasText: "night-shift@example.test" });
    await row.locator("select").selectOption("viewer");
    await row.locator('button:has-text("Change")').click();
    await page.waitForSelector(".flash.success");
    expect(await page.locator(".flash.success").textContent()).toContain("now has the role viewer");

    page.once("dialog", (dialog) => void dialog.accept());
    await page
      .locator("#operators tbody tr", { hasText: "night-shift@example.test" })
      .locator('button:has-text("Disable")')
      .click();
    await page.waitForSelector(".flash.success");
    expect(
      await page
        .locator("#operators tbody tr", { hasText: "night-shift@example.test" })
        .locator(".badge")
        .textContent(),
    ).toBe("disabled");
    await loginPage.goto(`${app.url}/devices`);
    expect(new URL(loginPage.url()).pathname).toBe("/login");
    await login.close();
    await app.token("viewer"); // a listed token, so both tables render rows at phone width
    await page.goto(`${app.url}/settings`);
    await screenshot(page, "console-settings");
    await page.setViewportSize(PHONE);
    await page.reload();
    await screenshot(page, "console-settings-phone");
    // At phone width no table runs off its card: each fits, or scrolls inside its own wrapper.
    const clipped = await page.evaluate(() =>
      Array.from(document.querySelectorAll("main .card"))
        .filter((card) => card.scrollWidth > card.clientWidth)
        .map((card) => card.id || card.className),
    );
    expect(clipped).toEqual([]);
    // The Operators and API tokens tables stack per row: every column shows without scrolling.
    const stacked = await page.evaluate(() =>
      ["#operators", "#api-tokens"].map((id) => {
        const card = document.querySelector(id)!.getBoundingClientRect();
        const wrap = document.querySelector(`${id} .table-wrap`)!;
        const cells = Array.from(wrap.querySelectorAll("tbody td")).filter(
          (td) => td.getClientRects().length > 0,
        );
        return {
          id,
          scrolls: wrap.scrollWidth > wrap.clientWidth,
          cellsOutside: cells.filter((td) => {
            const box = td.getBoundingClientRect();
            return box.right > card.right + 0.5 || box.left < card.left - 0.5;
          }).length,
        };
      }),
    );
    expect(stacked).toEqual([
      { id: "#operators", scrolls: false, cellsOutside: 0 },
      { id: "#api-tokens", scrolls: false, cellsOutside: 0 },
    ]);
    expect(await page.locator('#operators button:has-text("Enable")').first().isVisible()).toBe(true);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await context.close();
  }, 60_000);

  test("API tokens: created in the UI and shown once, revoked in the UI, then refused by the API", async () => {
    const context = await signedIn(browser, app, "admin");
    const page = await context.newPage();
    await page.goto(`${app.url}/settings`);
    await page.fill('#api-tokens input[name="name"]', "ci-pipeline");
    await page.selectOption('#api-tokens select[name="role"]', "viewer");
    await page.click('button:has-text("Create token")');
    const secret = (await page.locator("#new-token").textContent())!.trim();
    expect(secret.length).toBeGreaterThanOrEqual(32);
    const call = () => app.fetch("/api/v1/devices", { headers: { authorization: `Bearer ${secret}` } });
    expect((await call()).status).toBe(200);
    await page.goto(`${app.url}/settings`);
    expect(await page.locator("#new-token").count()).toBe(0); // shown once
    expect(await page.content()).not.toContain(secret);

    const row = page.locator("#api-tokens tbody tr", { hasText: "ci-pipeline" });
    let confirmText = "";
    page.once("dialog", (dialog) => {
      confirmText = dialog.message();
      void dialog.accept();
    });
    await row.locator('button:has-text("Revoke")').click();
    await page.waitForSelector(".flash.success");
    expect(confirmText).toContain('Revoke the token "ci-pipeline"?');
    expect(await page.locator(".flash.success").textContent()).toContain("Token revoked.");
    expect(
      await page
        .locator("#api-tokens tbody tr", { hasText: "ci-pipeline" })
        .locator(".badge")
        .allTextContents(),
    ).toContain("revoked");
    expect((await call()).status).toBe(401);
    await context.close();
  }, 60_000);

  test("the last admin can be neither demoted nor disabled; settings writes need admin", async () => {
    const admin = await app.session("admin");
    // Every other admin is disabled first, so this one is the last.
    await app.database
      .sql`update operators set disabled_at = now() where role = 'admin' and id <> ${admin.operatorId}::uuid`;
    const response = await app.fetch(`/settings/operators/${admin.operatorId}/role`, {
      ...form({ _csrf: admin.csrf, role: "viewer" }),
      headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
    });
    expect(response.status).toBe(303);
    const rows = await app.database.sql<
      { role: string }[]
    >`select role from operators where id = ${admin.operatorId}::uuid`;
    expect(rows[0]!.role).toBe("admin");
    const operator = await app.session("operator");
    const refused = await app.fetch("/settings/monitoring", {
      ...form({
        _csrf: operator.csrf,
        online_window_minutes: "1",
        offline_alert_minutes: "1",
        telemetry_retention_days: "1",
      }),
      headers: { cookie: operator.cookie, "content-type": "application/x-www-form-urlencoded" },
    });
    expect(refused.status).toBe(403);
  });
});
