import { Elysia } from "elysia";
import { consolePages } from "../../ui/page";
import { noteChanges } from "../audit/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { settingsRenderer } from "./render";
import { saveNotificationSettings } from "./store";
import type { Resolver } from "./webhook";

type Body = Record<string, unknown>;
const str = (value: unknown) => (typeof value === "string" ? value : "");

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
        const form = (body ?? {}) as Body;
        const result = await ctx.settings.saveMonitoring(form, actor(principal));
        if (!result.errors) noteChanges(request, result.before, result.after);
        if (result.errors) {
          return page(
            request,
            principal,
            {
              monitoringErrors: result.errors,
              monitoringValues: {
                online_window_minutes: str(form.online_window_minutes),
                offline_alert_minutes: str(form.offline_alert_minutes),
                telemetry_retention_days: str(form.telemetry_retention_days),
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
      { access: "admin" },
    )
    .post(
      "/settings/notifications",
      async ({ request, principal, body }) => {
        const form = (body ?? {}) as Body;
        const result = await saveNotificationSettings(database.sql, form, actor(principal), options.resolve);
        if (!result.errors) noteChanges(request, result.before, result.after);
        if (result.errors) {
          return page(
            request,
            principal,
            {
              notificationErrors: result.errors,
              notificationValues: {
                notification_email: str(form.notification_email),
                webhook_url: str(form.webhook_url),
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
      { access: "admin" },
    );
}
