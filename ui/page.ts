import {
  CSRF_COOKIE,
  consoleCookieName,
  csrfTokenFor,
  type Principal,
  readCookie,
} from "../modules/platform/access";
import { randomToken } from "../modules/platform/crypto";
import { CLEAR_FLASH_COOKIE, readFlash } from "./flash";
import type { PageContext } from "./layout";

export function pageContext(
  request: Request,
  principal: Principal | undefined,
  secretKey: string,
): PageContext {
  return {
    path: new URL(request.url).pathname,
    principal,
    csrfToken: principal?.kind === "session" ? csrfTokenFor(secretKey, principal.sessionIdHash) : "",
    flash: showsFlash(request) ? readFlash(request) : undefined,
  };
}

/**
 * Whether this request renders the page a person navigated to, which shows (and so consumes) the flash
 * message. A background htmx request (a live refresh, a poll) does not: it swaps in a fragment without
 * the message, and one landing between a form's redirect and the page it leads to would lose it.
 */
function showsFlash(request: Request): boolean {
  return request.headers.get("hx-request") !== "true" || request.headers.get("hx-boosted") === "true";
}

/** An HTML response that also consumes the flash message the page displayed. */
export async function htmlPage(
  ctx: Pick<PageContext, "flash">,
  html: string | Promise<string>,
  status = 200,
  extraCookies: string[] = [],
): Promise<Response> {
  const headers = new Headers({ "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
  if (ctx.flash) headers.append("set-cookie", CLEAR_FLASH_COOKIE);
  for (const cookie of extraCookies) headers.append("set-cookie", cookie);
  return new Response(await html, { status, headers });
}

/**
 * For forms shown before sign-in: the anonymous CSRF binding from the cookie, creating the cookie
 * when the browser has none yet.
 */
export function anonymousCsrf(request: Request, secretKey: string, secure: boolean) {
  const name = consoleCookieName(CSRF_COOKIE, secure);
  const existing = readCookie(request, name);
  const binding = existing && /^[\w-]{20,}$/.test(existing) ? existing : randomToken(18);
  const cookie =
    binding === existing
      ? undefined
      : `${name}=${binding}; Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}; Max-Age=86400`;
  return { binding: `anon:${binding}`, token: csrfTokenFor(secretKey, `anon:${binding}`), cookie };
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
