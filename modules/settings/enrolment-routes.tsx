import { Elysia } from "elysia";
import { redirectWithFlash } from "../../ui/flash";
import { createEnrolmentToken, installLine, revokeEnrolmentToken } from "../enrolment/service";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { settingsRenderer } from "./render";

type Form = Record<string, unknown>;
const text = (form: Form, name: string) => (typeof form[name] === "string" ? (form[name] as string) : "");
/** "" → null (unlimited / never); anything else a number (its checks are the service's). */
const optionalNumber = (value: string) => (value.trim() === "" ? null : Number(value));

/** Settings → Enrolment tokens (admins). */
export function enrolmentSettingsRoutes(ctx: AppContext) {
  const sql = ctx.database.sql;
  const page = settingsRenderer(ctx);
  return new Elysia({ name: "settings-enrolment" })
    .use(ctx.access)
    .post(
      "/settings/enrolment-tokens",
      async ({ body, principal, request }) => {
        const form = (body ?? {}) as Form;
        const values = {
          name: text(form, "name"),
          product_name: text(form, "product_name"),
          max_uses: text(form, "max_uses"),
          expires_in_days: text(form, "expires_in_days"),
          approve: text(form, "approve") === "true" ? "true" : "false",
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
      { access: "admin" },
    )
    .post(
      "/settings/enrolment-tokens/:id/revoke",
      async ({ params, request }) => {
        const revoked = await revokeEnrolmentToken(sql, params.id);
        return redirectWithFlash(
          "/settings#enrolment-tokens",
          revoked
            ? { kind: "success", text: "Enrolment token revoked. Devices it enrolled stay." }
            : { kind: "error", text: "That enrolment token was already revoked." },
          request,
        );
      },
      { access: "admin" },
    );
}
