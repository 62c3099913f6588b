import {
  CSRF_COOKIE,
  consoleCookie,
  consoleCookieName,
  csrfTokenFor,
  type Principal,
  readCookie,
} from "../modules/platform/access";
import type { Config } from "../modules/platform/config";
import { randomToken } from "../modules/platform/crypto";
import { clearFlashCookie, type Flash, flashCookie, readFlash, redirectSettingCookies } from "./flash";
import type { PageContext } from "./layout";

const ANONYMOUS_CSRF_MAX_AGE_SECONDS = 86400;

/**
 * The console's page and redirect helpers for one app, built from its configuration: the one place that
 * knows the secret CSRF tokens are signed with and whether BASE_URL is https, which names the console's
 * cookies (`__Host-` and Secure over https: platform/access.ts). Each routes module takes these once.
 */
export function consolePages(config: Pick<Config, "secretKey" | "baseUrl">) {
  const { secretKey } = config;
  const https = config.baseUrl.startsWith("https:");
  return {
    https,

    pageContext(request: Request, principal: Principal | undefined): PageContext {
      return {
        path: new URL(request.url).pathname,
        principal,
        csrfToken: principal?.kind === "session" ? csrfTokenFor(secretKey, principal.sessionIdHash) : "",
        flash: showsFlash(request) ? readFlash(request, https) : undefined,
      };
    },

    /** An HTML response that also consumes the flash message the page displayed. */
    async htmlPage(
      ctx: Pick<PageContext, "flash">,
      html: string | Promise<string>,
      status = 200,
      extraCookies: string[] = [],
    ): Promise<Response> {
      const headers = new Headers({
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
      });
      if (ctx.flash) headers.append("set-cookie", clearFlashCookie(https));
      for (const cookie of extraCookies) headers.append("set-cookie", cookie);
      return new Response(await html, { status, headers });
    },

    /**
     * A 303 to `location` that shows `flash` on the next page (for htmx requests, an `HX-Redirect`),
     * also setting `extraCookies`.
     */
    redirectWithFlash(
      location: string,
      flash?: Flash,
      request?: Request,
      extraCookies: string[] = [],
    ): Response {
      return redirectSettingCookies(
        location,
        [...extraCookies, ...(flash ? [flashCookie(flash, https)] : [])],
        request,
      );
    },

    /**
     * For forms shown before sign-in: the anonymous CSRF binding from the cookie, creating the cookie
     * when the browser has none yet.
     */
    anonymousCsrf(request: Request) {
      const existing = readCookie(request, consoleCookieName(CSRF_COOKIE, https));
      const binding = existing && /^[\w-]{20,}$/.test(existing) ? existing : randomToken(18);
      const cookie =
        binding === existing
          ? undefined
          : consoleCookie(CSRF_COOKIE, binding, https, ANONYMOUS_CSRF_MAX_AGE_SECONDS);
      return { binding: `anon:${binding}`, token: csrfTokenFor(secretKey, `anon:${binding}`), cookie };
    },
  };
}

export type ConsolePages = ReturnType<typeof consolePages>;

/**
 * Whether this request renders the page a person navigated to, which shows (and so consumes) the flash
 * message. A background htmx request (a live refresh, a poll) does not: it swaps in a fragment without
 * the message, and one landing between a form's redirect and the page it leads to would lose it.
 */
function showsFlash(request: Request): boolean {
  return request.headers.get("hx-request") !== "true" || request.headers.get("hx-boosted") === "true";
}

const PLACEHOLDER_ORIGIN = "http://console.invalid";

/**
 * Only same-origin paths may be redirect targets after sign-in. The value is parsed as a URL against
 * the console's origin and refused ("/") when it leaves it; control characters and backslashes are
 * refused before parsing, because browsers drop or rewrite them (`/\t/evil.example` becomes
 * `//evil.example`, a different host).
 */
export function safeNext(next: unknown): string {
  if (typeof next !== "string" || next.length > 2000 || !next.startsWith("/")) return "/";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused here
  if (/[\u0000-\u001f\u007f\\]/.test(next)) return "/";
  let url: URL;
  try {
    url = new URL(next, PLACEHOLDER_ORIGIN);
  } catch {
    return "/";
  }
  if (url.origin !== PLACEHOLDER_ORIGIN || url.pathname.startsWith("//")) return "/";
  return `${url.pathname}${url.search}${url.hash}`;
}
