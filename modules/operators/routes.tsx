import { Elysia, t } from "elysia";
import type { Flash } from "../../ui/flash";
import { consolePages, safeNext } from "../../ui/page";
import { noteAudit, recordAudit } from "../audit/service";
import { checkCsrf, consoleCookie, SESSION_COOKIE, sessionCookie } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { passwordSignInAllowed } from "../platform/sso-config";
import { AccountButtonForm, LoginForm, SetupForm } from "./model";
import { LoginPage, type SetupErrors, SetupPage } from "./pages";
import {
  authenticate,
  completeSetup,
  countOperators,
  createSession,
  deleteSession,
  markSignedIn,
} from "./service";
import { beginSignIn, PENDING_SIGN_IN_MINUTES } from "./sign-in";

export function operatorRoutes(ctx: AppContext) {
  const { config, database, access } = ctx;
  const db = database.db;
  const { https, pageContext, htmlPage, redirectWithFlash, anonymousCsrf } = consolePages(config);

  const cookieOptions = { https, ttlHours: config.sessionTtlHours };

  async function signedIn(
    operatorId: string,
    request: Request,
    address: string,
    location: string,
    flash?: Flash,
  ) {
    const token = await createSession(db, {
      operatorId,
      ttlHours: config.sessionTtlHours,
      address,
      userAgent: request.headers.get("user-agent") ?? undefined,
    });
    return redirectWithFlash(location, flash, undefined, [sessionCookie(token, cookieOptions)]);
  }

  return new Elysia({ name: "operators" })
    .use(access)
    .get(
      "/login",
      async ({ request, query }) => {
        if ((await countOperators(db)) === 0) return redirectWithFlash("/setup");
        const csrf = anonymousCsrf(request);
        const page = pageContext(request, undefined);
        return htmlPage(
          page,
          <LoginPage
            csrfToken={csrf.token}
            next={safeNext(query.next)}
            flash={page.flash}
            sso={config.sso}
          />,
          200,
          csrf.cookie ? [csrf.cookie] : [],
        );
      },
      { access: "public", query: t.Object({ next: t.Optional(t.String()) }) },
    )
    .post(
      "/login",
      async ({ request, body, server }) => {
        const csrf = anonymousCsrf(request);
        checkCsrf(config.secretKey, csrf.cookie ? undefined : csrf.binding, request, body);
        const next = safeNext(body.next);
        const address = clientAddress(request, server);
        try {
          const operator = await authenticate(db, { email: body.email, password: body.password, address });
          if (!passwordSignInAllowed(config.sso, operator)) {
            const via = config.sso.oidc ? `: use “Sign in with ${config.sso.oidc.displayName}”` : "";
            throw new AppError(403, "password_sign_in_off", `Password sign-in is turned off${via}.`);
          }
          const { token, stage } = await beginSignIn(db, operator, {
            ttlHours: config.sessionTtlHours,
            address,
            userAgent: request.headers.get("user-agent") ?? undefined,
          });
          if (stage === "signed_in") {
            await recordAudit(ctx.database, {
              actorKind: "operator",
              actor: operator.email,
              action: "session.sign_in",
              target: `operator:${operator.id}`,
              status: 303,
              address,
            });
            return redirectWithFlash(next, undefined, undefined, [sessionCookie(token, cookieOptions)]);
          }
          // The password was right: the second factor (or its enrolment) comes next, under a pending cookie.
          const step = stage === "factor" ? "/login/second-factor" : "/login/enrol";
          return redirectWithFlash(`${step}?next=${encodeURIComponent(next)}`, undefined, undefined, [
            consoleCookie(SESSION_COOKIE, token, https, PENDING_SIGN_IN_MINUTES * 60),
          ]);
        } catch (error) {
          if (!(error instanceof AppError) || ![401, 403, 429].includes(error.status)) throw error;
          // The email tried, never the password.
          await recordAudit(ctx.database, {
            actorKind: "anonymous",
            actor: body.email.trim().toLowerCase().slice(0, 254) || "(empty)",
            action: "session.sign_in_failed",
            status: error.status,
            address,
          });
          const response = await htmlPage(
            { flash: undefined },
            <LoginPage
              csrfToken={csrf.token}
              next={next}
              email={body.email}
              error={error.message}
              sso={config.sso}
            />,
            error.status,
          );
          for (const [name, value] of Object.entries(error.headers ?? {})) response.headers.set(name, value);
          return response;
        }
      },
      { access: "public", body: LoginForm },
    )
    .post(
      "/logout",
      async ({ principal, request }) => {
        if (principal?.kind === "session") {
          await deleteSession(db, principal.sessionIdHash);
          noteAudit(request, { target: `operator:${principal.operatorId}` });
        }
        // With single sign-on, the signed-out page offers to end the provider's session too.
        const location = config.sso.oidc ? "/auth/oidc/signed-out" : "/login";
        return redirectWithFlash(location, { kind: "info", text: "You are signed out." }, undefined, [
          sessionCookie(undefined, cookieOptions),
        ]);
      },
      { access: "viewer", body: AccountButtonForm },
    )
    .get(
      "/setup",
      async ({ request }) => {
        if ((await countOperators(db)) > 0) return redirectWithFlash("/login");
        const csrf = anonymousCsrf(request);
        return htmlPage(
          { flash: undefined },
          <SetupPage csrfToken={csrf.token} />,
          200,
          csrf.cookie ? [csrf.cookie] : [],
        );
      },
      { access: "public" },
    )
    .post(
      "/setup",
      async ({ request, body, server }) => {
        const csrf = anonymousCsrf(request);
        checkCsrf(config.secretKey, csrf.cookie ? undefined : csrf.binding, request, body);
        try {
          const admin = await completeSetup(db, body);
          noteAudit(request, { target: `operator:${admin.id}`, details: { email: admin.email } });
          const address = clientAddress(request, server);
          await markSignedIn(db, admin, address);
          return signedIn(admin.id, request, address, "/", {
            kind: "success",
            text: "Your administrator account is ready.",
          });
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          if (error.code === "setup_complete")
            return redirectWithFlash("/login", { kind: "info", text: error.message });
          const errors: SetupErrors =
            error.code === "invalid_setup_code"
              ? { code: error.message }
              : error.message.toLowerCase().includes("password")
                ? { password: error.message }
                : { email: error.message };
          return htmlPage(
            { flash: undefined },
            <SetupPage csrfToken={csrf.token} email={body.email} errors={errors} />,
            error.status,
          );
        }
      },
      { access: "public", body: SetupForm },
    );
}
