import { Elysia, t } from "elysia";
import { redirectWithFlash } from "../../ui/flash";
import { changeOperatorRole, inviteOperator, setOperatorDisabled } from "../operators/management";
import { createApiToken, isOperatorRole, revokeApiToken } from "../operators/service";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { QUIET } from "../platform/schemas";
import { settingsRenderer } from "./render";

type Body = Record<string, unknown>;
const str = (value: unknown) => (typeof value === "string" ? value : "");

/** Who may sign in and call the API: the Operators and API tokens sections of Settings (admins only). */
export function accessSettingsRoutes(ctx: AppContext) {
  const { database } = ctx;
  const db = database.db;
  const page = settingsRenderer(ctx);

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

  return new Elysia({ name: "settings-access" })
    .use(ctx.access)
    .post(
      "/settings/operators",
      async ({ request, principal, body }) => {
        const form = (body ?? {}) as Body;
        const values = { email: str(form.email).trim(), role: str(form.role) || "viewer" };
        try {
          const { operator, password } = await inviteOperator(db, values);
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
          () => changeOperatorRole(db, operatorId(params.id), str(((body ?? {}) as Body).role)),
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
              throw new AppError(409, "own_account", "You cannot disable your own account.");
            }
            return setOperatorDisabled(db, operatorId(params.id), true);
          },
          (email) => `${email} is disabled and signed out.`,
        ),
      { access: "admin" },
    )
    .post(
      "/settings/operators/:id/enable",
      ({ params }) =>
        operatorChange(
          () => setOperatorDisabled(db, operatorId(params.id), false),
          (email) => `${email} can sign in again.`,
        ),
      { access: "admin" },
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
        body: t.Object(
          {
            name: t.String({ maxLength: 200 }),
            role: t.String(),
            _csrf: t.Optional(t.String()),
          },
          { ...QUIET, additionalProperties: true },
        ),
      },
    )
    .post(
      "/settings/tokens/:id/revoke",
      async ({ params }) => {
        const revoked = await revokeApiToken(db, params.id);
        return redirectWithFlash(
          "/settings#api-tokens",
          revoked
            ? { kind: "success", text: "Token revoked." }
            : { kind: "error", text: "That token was already revoked." },
        );
      },
      { access: "admin", params: t.Object({ id: t.String({ format: "uuid" }) }) },
    );
}
