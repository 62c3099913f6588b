import { Elysia } from "elysia";
import { consolePages, safeNext } from "../../ui/page";
import { consoleCookie, consoleCookieName, readCookie, sessionCookie } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError, notFound } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { LinkForm, SignInQuery } from "./model";
import { LinkPage, SignedOutPage, SignInRefusedPage } from "./pages";
import {
  CALLBACK_PATH,
  FLOW_MINUTES,
  finishOidcSignIn,
  linkedIdentity,
  providerSignOutUrl,
  singleSignOn,
  startOidcSignIn,
} from "./service";

/**
 * Single sign-on routes. They exist whether or not OIDC_ISSUER is set (so the access tests see them)
 * and answer 404 while it is not.
 */
export function oidcRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  const { https, pageContext, htmlPage, redirectWithFlash } = consolePages(config);
  const sso = config.sso.oidc && singleSignOn(config.sso.oidc, config.baseUrl);
  const flowCookieName = consoleCookieName("outpost_oidc", https);
  const flowCookie = (value: string, maxAge: number) => consoleCookie("outpost_oidc", value, https, maxAge);

  function enabled() {
    if (!sso) throw notFound("Single sign-on is not configured");
    return sso;
  }

  function refusedPage(error: unknown) {
    if (!(error instanceof AppError) || !sso) throw error;
    return htmlPage(
      { flash: undefined },
      <SignInRefusedPage
        providerName={sso.oidc.displayName}
        message={error.message}
        canLink={error.code === "oidc_email_taken"}
      />,
      error.status,
      [flowCookie("", 0)],
    );
  }

  /** Off to the provider, with the cookie that binds the callback to this browser. */
  function toProvider(started: { flowId: string; authorizationUrl: URL }) {
    const response = new Response(null, {
      status: 303,
      headers: { location: started.authorizationUrl.href },
    });
    response.headers.append("set-cookie", flowCookie(started.flowId, FLOW_MINUTES * 60));
    return response;
  }

  return new Elysia({ name: "oidc" })
    .use(ctx.access)
    .get(
      "/auth/oidc/login",
      async ({ query }) => {
        const sso = enabled();
        try {
          return toProvider(await startOidcSignIn(database, sso, safeNext(query.next)));
        } catch (error) {
          return refusedPage(error);
        }
      },
      { access: "public", query: SignInQuery },
    )
    .get(
      CALLBACK_PATH,
      async ({ request, server }) => {
        const sso = enabled();
        try {
          const { sessionToken, next } = await finishOidcSignIn(database, sso, {
            flowId: readCookie(request, flowCookieName),
            search: new URL(request.url).search,
            address: clientAddress(request, server),
            userAgent: request.headers.get("user-agent") ?? undefined,
            sessionTtlHours: config.sessionTtlHours,
          });
          return redirectWithFlash(next, undefined, undefined, [
            flowCookie("", 0),
            sessionCookie(sessionToken, { https, ttlHours: config.sessionTtlHours }),
          ]);
        } catch (error) {
          return refusedPage(error);
        }
      },
      { access: "public" },
    )
    .get(
      "/auth/oidc/link",
      async ({ request, principal }) => {
        const sso = enabled();
        const ctx = pageContext(request, principal);
        const linked =
          principal?.kind === "session"
            ? await linkedIdentity(database.db, principal.operatorId, sso.oidc.issuer)
            : undefined;
        return htmlPage(ctx, <LinkPage ctx={ctx} providerName={sso.oidc.displayName} linked={linked} />);
      },
      { access: "viewer" },
    )
    .post(
      "/auth/oidc/link",
      async ({ principal }) => {
        // A form post with the session's CSRF token: a link is never started by another site's link.
        if (principal?.kind !== "session") {
          throw new AppError(403, "session_required", "Link a provider account from the console, signed in");
        }
        const sso = enabled();
        try {
          const started = await startOidcSignIn(database, sso, "/auth/oidc/link", principal.operatorId);
          return toProvider(started);
        } catch (error) {
          return refusedPage(error);
        }
      },
      { access: "viewer", body: LinkForm },
    )
    .get(
      "/auth/oidc/signed-out",
      async ({ request }) => {
        const sso = enabled();
        const providerSignOut = await providerSignOutUrl(sso, `${config.baseUrl}/login`);
        const page = pageContext(request, undefined);
        return htmlPage(
          page,
          <SignedOutPage
            providerName={sso.oidc.displayName}
            providerSignOut={providerSignOut?.href}
            flash={page.flash}
          />,
        );
      },
      { access: "public" },
    );
}
