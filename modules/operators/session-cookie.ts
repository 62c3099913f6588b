import { consoleCookieName, readCookie, SESSION_COOKIE } from "../platform/access";

/**
 * The console's session cookie: `__Host-` named, Secure over https (docs/security.md). A pending
 * sign-in (password right, second factor still asked) travels in the same cookie, for minutes.
 */
export function sessionCookies(baseUrl: string) {
  const secure = baseUrl.startsWith("https:");
  const name = consoleCookieName(SESSION_COOKIE, secure);
  const attributes = `Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`;
  return {
    secure,
    set: (token: string, maxAgeSeconds: number) =>
      `${name}=${token}; ${attributes}; Max-Age=${maxAgeSeconds}`,
    clear: `${name}=; ${attributes}; Max-Age=0`,
    read: (request: Request) => readCookie(request, name),
  };
}
