import { Elysia } from "elysia";
import { redirectWithFlash } from "../../ui/flash";
import { htmlPage, pageContext } from "../../ui/page";
import { SettingsPage, type SettingsPageProps } from "../../ui/pages/settings";
import { changeOperatorRole, inviteOperator, setOperatorDisabled } from "../operators/management";
import { listApiTokens } from "../operators/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { settingsPageExtras } from "./page";
import { saveMonitoringSettings, saveNotificationSettings } from "./store";
import type { Resolver } from "./webhook";

type Body = Record<string, unknown>;
const str = (value: unknown) => (typeof value === "string" ? value : "");

function actor(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === "session" ? principal.email : `token ${principal.name}`;
}

/** Admin writes of the Settings page (the page itself is served by the operators module). */
export function settingsRoutes(ctx: AppContext, options: { resolve?: Resolver } = {}) {
  const { config, database } = ctx;

  async function page(
    request: Request,
    principal: Principal | undefined,
    props: Partial<SettingsPageProps>,
    status: number,
  ) {
    const context = pageContext(request, principal, config.secretKey);
    const [tokens, extras] = await Promise.all([listApiTokens(database.db), settingsPageExtras(ctx)]);
    return htmlPage(context, <SettingsPage ctx={context} props={{ tokens, ...extras, ...props }} />, status);
  }

  function operatorId(id: string) {
    if (!isUuid(id)) throw new AppError(404, "operator_not_found", "No such operator");
    return id;
  }

  async function operatorChange(run: () => Promise<{ email: string }>, success: (email: string) => string) {
    try {
      const operator = await run();
      return redirectWithFlash("/settings#operators", { kind: "success", text: success(operator.email) });
    } catch (error) {
      if (error instanceof AppError && [400, 404, 409].includes(error.status)) {
        return redirectWithFlash("/settings#operators", { kind: "error", text: error.message });
      }
      throw error;
    }
  }

  return new Elysia({ name: "settings" })
    .use(ctx.access)
    .post(
      "/settings/monitoring",
      async ({ request, principal, body }) => {
        const form = (body ?? {}) as Body;
        const result = await saveMonitoringSettings(database.sql, form, actor(principal));
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
    )
    .post(
      "/settings/operators",
      async ({ request, principal, body }) => {
        const form = (body ?? {}) as Body;
        const values = { email: str(form.email).trim(), role: str(form.role) || "viewer" };
        try {
          const { operator, password } = await inviteOperator(database.db, values);
          return page(request, principal, { newOperator: { email: operator.email, password } }, 201);
        } catch (error) {
          if (error instanceof AppError && (error.status === 400 || error.status === 409)) {
            return page(
              request,
              principal,
              { operatorErrors: { email: error.message }, operatorValues: values },
              error.status,
            );
          }
          throw error;
        }
      },
      { access: "admin" },
    )
    .post(
      "/settings/operators/:id/role",
      ({ params, body }) =>
        operatorChange(
          () => changeOperatorRole(database.db, operatorId(params.id), str(((body ?? {}) as Body).role)),
          (email) => `${email} now has the role ${str(((body ?? {}) as Body).role)}.`,
        ),
      { access: "admin" },
    )
    .post(
      "/settings/operators/:id/disable",
      ({ params, principal }) =>
        operatorChange(
          async () => {
            if (principal?.kind === "session" && principal.operatorId === params.id) {
              throw new AppError(409, "self", "You cannot disable your own account.");
            }
            return setOperatorDisabled(database.db, operatorId(params.id), true);
          },
          (email) => `${email} is disabled and signed out.`,
        ),
      { access: "admin" },
    )
    .post(
      "/settings/operators/:id/enable",
      ({ params }) =>
        operatorChange(
          () => setOperatorDisabled(database.db, operatorId(params.id), false),
          (email) => `${email} can sign in again.`,
        ),
      { access: "admin" },
    );
}
