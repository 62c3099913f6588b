import { Elysia } from "elysia";
import { consolePages } from "../../ui/page";
import { noteChanges } from "../audit/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { MonitoringForm, NotificationForm } from "./model";
import { settingsRenderer } from "./render";
import { saveMonitoringSettings, saveNotificationSettings } from "./store";
import type { Resolver } from "./webhook";

function actor(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === "session" ? principal.email : `token ${principal.name}`;
}

/** The Settings page and its monitoring and notification forms (admins only). */
export function settingsRoutes(ctx: AppContext, options: { resolve?: Resolver } = {}) {
  const { redirectWithFlash } = consolePages(ctx.config);
  const { database } = ctx;

  const page = settingsRenderer(ctx);

  return new Elysia({ name: "settings" })
    .use(ctx.access)
    .get("/settings", ({ request, principal }) => page(request, principal, {}), { access: "admin" })
    .post(
      "/settings/monitoring",
      async ({ request, principal, body }) => {
        const result = await saveMonitoringSettings(database.sql, body, actor(principal));
        if (!result.errors) noteChanges(request, result.before, result.after);
        if (result.errors) {
          return page(
            request,
            principal,
            {
              monitoringErrors: result.errors,
              monitoringValues: {
                online_window_minutes: body.online_window_minutes ?? "",
                offline_alert_minutes: body.offline_alert_minutes ?? "",
                telemetry_retention_days: body.telemetry_retention_days ?? "",
              },
            },
            400,
          );
        }
        return redirectWithFlash("/settings#monitoring", {
          kind: "success",
          text: "Monitoring settings saved.",
        });
      },
      { access: "admin", body: MonitoringForm },
    )
    .post(
      "/settings/notifications",
      async ({ request, principal, body }) => {
        const result = await saveNotificationSettings(database.sql, body, actor(principal), options.resolve);
        if (!result.errors) noteChanges(request, result.before, result.after);
        if (result.errors) {
          return page(
            request,
            principal,
            {
              notificationErrors: result.errors,
              notificationValues: {
                notification_email: body.notification_email ?? "",
                webhook_url: body.webhook_url ?? "",
              },
            },
            400,
          );
        }
        return redirectWithFlash("/settings#notifications", {
          kind: "success",
          text: "Notification settings saved.",
        });
      },
      { access: "admin", body: NotificationForm },
    );
}
