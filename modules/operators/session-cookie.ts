import { consoleCookie, consoleCookieName, readCookie, SESSION_COOKIE } from "../platform/access";

/**
 * The console's session cookie: `__Host-` named, Secure over https (docs/security.md). A pending
 * sign-in (password right, second factor still asked) travels in the same cookie, for minutes.
 */
export function sessionCookies(baseUrl: string) {
  const secure = baseUrl.startsWith("https:");
  return {
    secure,
    set: (token: string, maxAgeSeconds: number) =>
      consoleCookie(SESSION_COOKIE, token, secure, maxAgeSeconds),
    clear: consoleCookie(SESSION_COOKIE, "", secure, 0),
    read: (request: Request) => readCookie(request, consoleCookieName(SESSION_COOKIE, secure)),
  };
}
