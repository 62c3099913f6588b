import { Elysia } from "elysia";
import { consolePages } from "../../ui/page";
import { noteChanges } from "../audit/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { MonitoringForm, NotificationForm } from "./model";
import { type SettingsOverrides, settingsRenderer } from "./render";
import { type FieldErrors, type SaveOutcome, saveNotificationSettings } from "./store";
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

  /** A settings form saved: audited, back to its section; refused: the page again with its errors (400). */
  const afterSave = (
    request: Request,
    principal: Principal | undefined,
    result: SaveOutcome,
    form: { section: string; text: string; invalid: (errors: FieldErrors) => SettingsOverrides },
  ) => {
    if (result.errors) return page(request, principal, form.invalid(result.errors), 400);
    noteChanges(request, result.before, result.after);
    return redirectWithFlash(`/settings#${form.section}`, { kind: "success", text: form.text });
  };

  return new Elysia({ name: "settings" })
    .use(ctx.access)
    .get("/settings", ({ request, principal }) => page(request, principal, {}), { access: "admin" })
    .post(
      "/settings/monitoring",
      async ({ request, principal, body }) =>
        afterSave(request, principal, await ctx.settings.saveMonitoring(body, actor(principal)), {
          section: "monitoring",
          text: "Monitoring settings saved.",
          invalid: (errors) => ({
            monitoringErrors: errors,
            monitoringValues: {
              online_window_minutes: body.online_window_minutes ?? "",
              offline_alert_minutes: body.offline_alert_minutes ?? "",
              telemetry_retention_days: body.telemetry_retention_days ?? "",
            },
          }),
        }),
      { access: "admin", body: MonitoringForm },
    )
    .post(
      "/settings/notifications",
      async ({ request, principal, body }) =>
        afterSave(
          request,
          principal,
          await saveNotificationSettings(database.sql, body, actor(principal), options.resolve),
          {
            section: "notifications",
            text: "Notification settings saved.",
            invalid: (errors) => ({
              notificationErrors: errors,
              notificationValues: {
                notification_email: body.notification_email ?? "",
                webhook_url: body.webhook_url ?? "",
              },
            }),
          },
        ),
      { access: "admin", body: NotificationForm },
    );
}
