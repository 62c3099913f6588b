import { Elysia } from "elysia";
import { outcomeFlash } from "../../ui/flash";
import { consolePages } from "../../ui/page";
import { noteAudit, noteChanges } from "../audit/service";
import {
  changeOperatorRole,
  createApiToken,
  inviteOperator,
  isOperatorRole,
  operatorById,
  resetFactors,
  revokeApiToken,
  saveFactorPolicy,
  setOperatorDisabled,
} from "../operators/service";
import { principalLabel } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import {
  FactorPolicyForm,
  IdParams,
  InviteForm,
  RoleForm,
  SettingsButtonForm,
  TokenForm,
  UuidParams,
} from "./model";
import { settingsRenderer } from "./render";

/** Who may sign in and call the API: the Operators and API tokens sections of Settings (admins only). */
export function accessSettingsRoutes(ctx: AppContext) {
  const { redirectWithFlash } = consolePages(ctx.config);
  const { database } = ctx;
  const db = database.db;
  const page = settingsRenderer(ctx);

  function operatorId(id: string) {
    if (!isUuid(id)) throw new AppError(404, "operator_not_found", "No such operator");
    return id;
  }

  /** Runs a change to an operator; the audit event names them by email too (ids are opaque to readers). */
  async function operatorChange(
    request: Request,
    run: () => Promise<{ email: string }>,
    success: (email: string) => string,
  ) {
    try {
      const operator = await run();
      noteAudit(request, { details: { email: operator.email } });
      return redirectWithFlash("/settings#operators", { kind: "success", text: success(operator.email) });
    } catch (error) {
      if (error instanceof AppError && [400, 404, 409].includes(error.status)) {
        return redirectWithFlash("/settings#operators", { kind: "error", text: error.message });
      }
      throw error;
    }
  }

  return new Elysia({ name: "settings-access" })
    .use(ctx.access)
    .post(
      "/settings/operators",
      async ({ request, principal, body }) => {
        const values = { email: (body.email ?? "").trim(), role: body.role || "viewer" };
        try {
          const { operator, password } = await inviteOperator(db, values);
          noteAudit(request, { target: `operator:${operator.id}`, details: { email: operator.email } });
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
      { access: "admin", body: InviteForm },
    )
    .post(
      "/settings/operators/:id/role",
      ({ params, body, request }) =>
        operatorChange(
          request,
          async () => {
            const changed = await changeOperatorRole(db, operatorId(params.id), body.role ?? "");
            noteChanges(request, { role: changed.previousRole }, { role: changed.role });
            return changed;
          },
          (email) => `${email} now has the role ${body.role ?? ""}.`,
        ),
      { access: "admin", params: IdParams, body: RoleForm },
    )
    .post(
      "/settings/operators/:id/disable",
      ({ params, principal, request }) =>
        operatorChange(
          request,
          async () => {
            if (principal?.kind === "session" && principal.operatorId === params.id) {
              throw new AppError(409, "own_account", "You cannot disable your own account.");
            }
            return setOperatorDisabled(db, operatorId(params.id), true);
          },
          (email) => `${email} is disabled and signed out.`,
        ),
      { access: "admin", params: IdParams, body: SettingsButtonForm },
    )
    .post(
      "/settings/operators/:id/enable",
      ({ params, request }) =>
        operatorChange(
          request,
          () => setOperatorDisabled(db, operatorId(params.id), false),
          (email) => `${email} can sign in again.`,
        ),
      { access: "admin", params: IdParams, body: SettingsButtonForm },
    )
    .post(
      "/settings/operators/:id/reset-factors",
      ({ params, request }) =>
        operatorChange(
          request,
          async () => {
            const operator = await operatorById(db, operatorId(params.id));
            await resetFactors(db, operator.id);
            return operator;
          },
          (email) => `Every second factor of ${email} was removed.`,
        ),
      { access: "admin", params: IdParams, body: SettingsButtonForm },
    )
    .post(
      "/settings/second-factor",
      async ({ principal, body }) => {
        try {
          await saveFactorPolicy(db, body, principalLabel(principal) ?? "admin");
          return redirectWithFlash("/settings#second-factor", {
            kind: "success",
            text: "Second-factor settings saved.",
          });
        } catch (error) {
          if (error instanceof AppError && error.status === 400) {
            return redirectWithFlash("/settings#second-factor", { kind: "error", text: error.message });
          }
          throw error;
        }
      },
      { access: "admin", body: FactorPolicyForm },
    )
    .post(
      "/settings/tokens",
      async ({ request, principal, body }) => {
        if (!isOperatorRole(body.role)) {
          return page(request, principal, { tokenError: "Choose a role", tokenName: body.name }, 400);
        }
        try {
          const createdBy = principal?.kind === "session" ? principal.operatorId : undefined;
          const { token, record } = await createApiToken(db, { name: body.name, role: body.role, createdBy });
          noteAudit(request, { target: `token:${record.id}` });
          return page(request, principal, { newToken: { name: record.name, secret: token } }, 201);
        } catch (error) {
          if (error instanceof AppError && error.status === 400) {
            return page(request, principal, { tokenError: error.message, tokenName: body.name }, 400);
          }
          throw error;
        }
      },
      {
        access: "admin",
        body: TokenForm,
      },
    )
    .post(
      "/settings/tokens/:id/revoke",
      async ({ params, request }) => {
        const revoked = await revokeApiToken(db, params.id);
        noteAudit(request, { details: { revoked } });
        return redirectWithFlash(
          "/settings#api-tokens",
          outcomeFlash(revoked, "Token revoked.", "That token was already revoked."),
        );
      },
      { access: "admin", params: UuidParams, body: SettingsButtonForm },
    );
}
