import { Elysia, t } from "elysia";
import { flashCookie, redirectWithFlash } from "../../ui/flash";
import { anonymousCsrf, htmlPage, pageContext, safeNext } from "../../ui/page";
import { recordAudit } from "../audit/service";
import { checkCsrf, consoleCookieName, SESSION_COOKIE } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { QUIET } from "../platform/schemas";
import { LoginPage, type SetupErrors, SetupPage } from "./pages";
import { authenticate, completeSetup, countOperators, createSession, deleteSession } from "./service";

const LoginForm = t.Object(
  {
    email: t.String({ maxLength: 254 }),
    password: t.String({ maxLength: 1024 }),
    next: t.Optional(t.String({ maxLength: 2000 })),
    _csrf: t.Optional(t.String()),
  },
  { ...QUIET, additionalProperties: true },
);

const SetupForm = t.Object(
  {
    code: t.String({ maxLength: 100 }),
    email: t.String({ maxLength: 254 }),
    password: t.String({ maxLength: 1024 }),
    _csrf: t.Optional(t.String()),
  },
  { ...QUIET, additionalProperties: true },
);

export function operatorRoutes(ctx: AppContext) {
  const { config, database, access } = ctx;
  const db = database.db;
  const secure = config.baseUrl.startsWith("https:");

  const sessionName = consoleCookieName(SESSION_COOKIE, secure);
  function sessionCookie(token: string): string {
    return `${sessionName}=${token}; Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}; Max-Age=${config.sessionTtlHours * 3600}`;
  }
  const clearSessionCookie = `${sessionName}=; Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}; Max-Age=0`;

  async function signedIn(operatorId: string, request: Request, address: string, location: string) {
    const token = await createSession(db, {
      operatorId,
      ttlHours: config.sessionTtlHours,
      address,
      userAgent: request.headers.get("user-agent") ?? undefined,
    });
    const response = redirectWithFlash(location);
    response.headers.append("set-cookie", sessionCookie(token));
    return response;
  }

  return new Elysia({ name: "operators" })
    .use(access)
    .get(
      "/login",
      async ({ request, query }) => {
        if ((await countOperators(db)) === 0) return redirectWithFlash("/setup");
        const csrf = anonymousCsrf(request, config.secretKey, secure);
        const page = pageContext(request, undefined, config.secretKey);
        return htmlPage(
          page,
          <LoginPage csrfToken={csrf.token} next={safeNext(query.next)} flash={page.flash} />,
          200,
          csrf.cookie ? [csrf.cookie] : [],
        );
      },
      { access: "public", query: t.Object({ next: t.Optional(t.String()) }) },
    )
    .post(
      "/login",
      async ({ request, body, server }) => {
        const csrf = anonymousCsrf(request, config.secretKey, secure);
        checkCsrf(config.secretKey, csrf.cookie ? undefined : csrf.binding, request, body);
        const next = safeNext(body.next);
        const address = clientAddress(request, server);
        try {
          const operator = await authenticate(db, { email: body.email, password: body.password, address });
          await recordAudit(ctx.database, {
            actorKind: "operator",
            actor: operator.email,
            action: "session.sign_in",
            target: `operator:${operator.id}`,
            status: 303,
            address,
          });
          return signedIn(operator.id, request, address, next);
        } catch (error) {
          if (!(error instanceof AppError) || ![401, 429].includes(error.status)) throw error;
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
            <LoginPage csrfToken={csrf.token} next={next} email={body.email} error={error.message} />,
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
      async ({ principal }) => {
        if (principal?.kind === "session") await deleteSession(db, principal.sessionIdHash);
        const response = redirectWithFlash("/login", { kind: "info", text: "You are signed out." });
        response.headers.append("set-cookie", clearSessionCookie);
        return response;
      },
      { access: "viewer" },
    )
    .get(
      "/setup",
      async ({ request }) => {
        if ((await countOperators(db)) > 0) return redirectWithFlash("/login");
        const csrf = anonymousCsrf(request, config.secretKey, secure);
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
        const csrf = anonymousCsrf(request, config.secretKey, secure);
        checkCsrf(config.secretKey, csrf.cookie ? undefined : csrf.binding, request, body);
        try {
          const admin = await completeSetup(db, body);
          const response = await signedIn(admin.id, request, clientAddress(request, server), "/");
          response.headers.append(
            "set-cookie",
            flashCookie({ kind: "success", text: "Your administrator account is ready." }),
          );
          return response;
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
