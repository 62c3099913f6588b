import { Elysia } from "elysia";
import { PageHead } from "../../ui/components";
import { OneTimeSecret } from "../../ui/form";
import { Layout } from "../../ui/layout";
import { consolePages } from "../../ui/page";
import { actorLabel } from "../jsonapi";
import type { AppContext } from "../platform/context";
import { readConsoleSettings, rotateWebhookSecret } from "../settings/service";
import { AlertButtonForm } from "./model";
import { sendTestNotification } from "./notifications/deliver";
import { splitRecipients } from "./notifications/queue";

/**
 * The Settings page's alert actions (buttons on its Notifications card): a new webhook signing
 * secret, shown once, and "Send test notification". Admins only, like the rest of Settings.
 */
export function alertSettingsRoutes(ctx: AppContext) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const { config, database } = ctx;
  const sql = database.sql;
  return new Elysia({ name: "alert-settings" })
    .use(ctx.access)
    .post(
      "/settings/notifications/webhook-secret",
      async ({ request, principal }) => {
        const secret = await rotateWebhookSecret(sql, actorLabel(principal));
        const page = pageContext(request, principal);
        return htmlPage(
          page,
          <Layout ctx={page} title="Webhook signing secret">
            <PageHead
              title="Webhook signing secret"
              subtitle="Alerts sign every webhook with it (X-Outpost-Signature)."
            />
            <OneTimeSecret
              id="webhook-secret"
              headline="New signing secret."
              advice="Copy it into your receiver now: it is not shown again."
              secret={secret}
            />
            <p>
              <a class="btn" href="/settings#notifications">
                Back to Settings
              </a>
            </p>
          </Layout>,
        );
      },
      { access: "admin", body: AlertButtonForm },
    )
    .post(
      "/settings/notifications/test",
      async () => {
        const settings = await readConsoleSettings(sql, {
          onlineWindowSeconds: config.deviceOnlineWindowSeconds,
          telemetryRetentionDays: config.telemetryRetentionDays,
        });
        const results = await sendTestNotification(sql, config, splitRecipients(settings.notificationEmail));
        if (results.length === 0) {
          return redirectWithFlash("/settings#notifications", {
            kind: "error",
            text: "Nothing to test: set email recipients or a webhook URL first.",
          });
        }
        const failed = results.filter((r) => !r.ok);
        const text = results
          .map((r) => (r.ok ? `${r.channel}: sent` : `${r.channel}: ${r.error}`))
          .join("; ");
        return redirectWithFlash("/settings#notifications", {
          kind: failed.length > 0 ? "error" : "success",
          text: `Test notification — ${text}`,
        });
      },
      { access: "admin", body: AlertButtonForm },
    );
}
