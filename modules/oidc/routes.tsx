import { Elysia, t } from "elysia";
import { redirectWithFlash } from "../../ui/flash";
import { htmlPage, pageContext, safeNext } from "../../ui/page";
import { consoleCookieName, readCookie, sessionCookie } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError, notFound } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { SignedOutPage, SignInRefusedPage } from "./pages";
import {
  CALLBACK_PATH,
  FLOW_MINUTES,
  finishOidcSignIn,
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
  const https = config.baseUrl.startsWith("https:");
  const sso = config.sso.oidc && singleSignOn(config.sso.oidc, config.baseUrl);
  const flowCookieName = consoleCookieName("outpost_oidc", https);
  const flowCookie = (value: string, maxAge: number) =>
    `${flowCookieName}=${value}; Path=/; HttpOnly; SameSite=Lax${https ? "; Secure" : ""}; Max-Age=${maxAge}`;

  function enabled() {
    if (!sso) throw notFound("Single sign-on is not configured");
    return sso;
  }

  function refusedPage(error: unknown, status?: number) {
    if (!(error instanceof AppError) || !sso) throw error;
    return htmlPage(
      { flash: undefined },
      <SignInRefusedPage providerName={sso.oidc.displayName} message={error.message} />,
      status ?? error.status,
      [flowCookie("", 0)],
    );
  }

  return new Elysia({ name: "oidc" })
    .use(ctx.access)
    .get(
      "/auth/oidc/login",
      async ({ query }) => {
        const sso = enabled();
        try {
          const { flowId, authorizationUrl } = await startOidcSignIn(database, sso, safeNext(query.next));
          const response = new Response(null, { status: 303, headers: { location: authorizationUrl.href } });
          response.headers.append("set-cookie", flowCookie(flowId, FLOW_MINUTES * 60));
          return response;
        } catch (error) {
          return refusedPage(error);
        }
      },
      { access: "public", query: t.Object({ next: t.Optional(t.String({ maxLength: 2000 })) }) },
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
          const response = redirectWithFlash(next);
          response.headers.append("set-cookie", flowCookie("", 0));
          response.headers.append(
            "set-cookie",
            sessionCookie(sessionToken, { https, ttlHours: config.sessionTtlHours }),
          );
          return response;
        } catch (error) {
          return refusedPage(error);
        }
      },
      { access: "public" },
    )
    .get(
      "/auth/oidc/signed-out",
      async ({ request }) => {
        const sso = enabled();
        const providerSignOut = await providerSignOutUrl(sso, `${config.baseUrl}/login`);
        const page = pageContext(request, undefined, config.secretKey);
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
