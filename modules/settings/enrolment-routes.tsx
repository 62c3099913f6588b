import { Elysia } from "elysia";
import { outcomeFlash } from "../../ui/flash";
import { consolePages } from "../../ui/page";
import { noteAudit } from "../audit/service";
import { createEnrolmentToken, installLine, revokeEnrolmentToken } from "../enrolment/service";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { EnrolmentTokenForm, IdParams, SettingsButtonForm } from "./model";
import { settingsRenderer } from "./render";

/** "" → null (unlimited / never); anything else a number (its checks are the service's). */
const optionalNumber = (value: string) => (value.trim() === "" ? null : Number(value));

/** Settings → Enrolment tokens (admins). */
export function enrolmentSettingsRoutes(ctx: AppContext) {
  const { redirectWithFlash } = consolePages(ctx.config);
  const sql = ctx.database.sql;
  const page = settingsRenderer(ctx);
  return new Elysia({ name: "settings-enrolment" })
    .use(ctx.access)
    .post(
      "/settings/enrolment-tokens",
      async ({ body, principal, request }) => {
        const values = {
          name: body.name ?? "",
          product_name: body.product_name ?? "",
          max_uses: body.max_uses ?? "",
          expires_in_days: body.expires_in_days ?? "",
          approve: body.approve === "true" ? "true" : "false",
        };
        try {
          const { token, record } = await createEnrolmentToken(sql, {
            name: values.name,
            approve: values.approve === "true",
            productName: values.product_name,
            maxUses: optionalNumber(values.max_uses),
            expiresInDays: optionalNumber(values.expires_in_days),
            createdBy: principal?.kind === "session" ? principal.email : "admin",
          });
          noteAudit(request, { target: `enrolment_token:${record.id}` });
          const newEnrolment = {
            name: record.name,
            secret: token,
            installLine: installLine(ctx.config.baseUrl, token),
          };
          return page(request, principal, { newEnrolment }, 201);
        } catch (error) {
          if (!(error instanceof AppError) || error.status !== 400) throw error;
          const field = (error.details as { field?: string } | undefined)?.field ?? "name";
          return page(
            request,
            principal,
            { enrolmentErrors: { [field]: error.message }, enrolmentValues: values },
            400,
          );
        }
      },
      { access: "admin", body: EnrolmentTokenForm },
    )
    .post(
      "/settings/enrolment-tokens/:id/revoke",
      async ({ params, request }) => {
        const revoked = await revokeEnrolmentToken(sql, params.id);
        noteAudit(request, { details: { revoked } });
        return redirectWithFlash(
          "/settings#enrolment-tokens",
          outcomeFlash(
            revoked,
            "Enrolment token revoked. Devices it enrolled stay.",
            "That enrolment token was already revoked.",
          ),
          request,
        );
      },
      { access: "admin", params: IdParams, body: SettingsButtonForm },
    );
}
