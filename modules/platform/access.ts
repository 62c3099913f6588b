import { Elysia } from "elysia";
import { constantTimeEqual, hmacHex } from "./crypto";
import { AppError, forbidden, unauthorized } from "./errors";

/**
 * Who may call a route. Every route declares one (a test fails for a route that does not):
 * - public: anyone; - device: device API token, checked by the device module;
 * - e2e: E2E runner credentials, checked by the E2E module;
 * - viewer/operator/admin: an operator session or API token with at least that role.
 */
export type Access = "public" | "device" | "e2e" | "viewer" | "operator" | "admin";
export type PrincipalRole = "viewer" | "operator" | "admin";

export type Principal =
  | { kind: "session"; operatorId: string; email: string; role: PrincipalRole; sessionIdHash: string }
  | { kind: "token"; tokenId: string; name: string; role: PrincipalRole };

export const ACCESS_MARKER = Symbol.for("outpost.access");
const RANK: Record<PrincipalRole, number> = { viewer: 1, operator: 2, admin: 3 };
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export const SESSION_COOKIE = "outpost_session";
export const CSRF_COOKIE = "outpost_csrf";
export const CSRF_HEADER = "x-csrf-token";
export const CSRF_FIELD = "_csrf";

/**
 * The name the console gives cookie `name`. Over https it carries the `__Host-` prefix: a browser then
 * accepts it only when set by this exact host, Secure, with Path=/ and no Domain, so no other host under
 * the same parent domain (a device's web UI among them) can set, replace or shadow it. Plain http keeps
 * the bare name (browsers refuse `__Host-` cookies without Secure).
 */
export function consoleCookieName(name: string, https: boolean): string {
  return https ? `__Host-${name}` : name;
}

/**
 * The `Set-Cookie` value for console cookie `name`: host-only (no Domain), Path=/, HttpOnly, SameSite=Lax,
 * and over https Secure under its `__Host-` name. `maxAgeSeconds` 0 clears it.
 */
export function consoleCookie(name: string, value: string, https: boolean, maxAgeSeconds: number): string {
  const secure = https ? "; Secure" : "";
  return `${consoleCookieName(name, https)}=${value}; Path=/; HttpOnly; SameSite=Lax${secure}; Max-Age=${maxAgeSeconds}`;
}

/** CSRF token bound to a session (or, before sign-in, to the anonymous csrf cookie). */
export function csrfTokenFor(secret: string, binding: string): string {
  return hmacHex(secret, `csrf:${binding}`);
}

/**
 * The value of cookie `name`, or undefined when absent — or when it does not decode (`%zz`, a cut or
 * surrogate UTF-8 sequence): a cookie is whatever any site under the same parent domain managed to set,
 * so a malformed one is treated as no cookie, never as an error.
 */
export function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get("cookie");
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const index = part.indexOf("=");
    if (index > 0 && part.slice(0, index).trim() === name) {
      try {
        return decodeURIComponent(part.slice(index + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

export function submittedCsrfToken(request: Request, body: unknown): string | undefined {
  const header = request.headers.get(CSRF_HEADER);
  if (header) return header;
  if (body && typeof body === "object" && CSRF_FIELD in body) {
    const value = (body as Record<string, unknown>)[CSRF_FIELD];
    return typeof value === "string" ? value : undefined;
  }
  return undefined;
}

export function checkCsrf(
  secret: string,
  binding: string | undefined,
  request: Request,
  body: unknown,
): void {
  const submitted = submittedCsrfToken(request, body);
  if (!binding || !submitted || !constantTimeEqual(submitted, csrfTokenFor(secret, binding))) {
    throw new AppError(
      403,
      "csrf_failed",
      "The form expired or did not come from this site. Reload the page and try again.",
    );
  }
}

export interface AccessOptions {
  secretKey: string;
  resolvePrincipal(request: Request): Promise<Principal | undefined>;
}

/**
 * The `access` route option. It runs at the transform stage — before body validation, so callers
 * without the right credentials learn nothing about a route's input — resolves the principal,
 * enforces the role and, for cookie sessions, CSRF on every state-changing method. Bearer-token
 * calls carry no ambient credentials, so they need no CSRF token. Handlers get `principal`.
 */
export function accessPlugin(options: AccessOptions) {
  const principals = new WeakMap<Request, Principal>();
  const plugin = new Elysia({ name: "outpost-access" }).macro({
    access(level: Access) {
      const transform = async ({ request, body }: { request: Request; body: unknown }) => {
        if (level === "public" || level === "device" || level === "e2e") return;
        const principal = await options.resolvePrincipal(request);
        if (!principal) throw unauthorized();
        principals.set(request, principal); // known even when refused below (the audit log names them)
        if (RANK[principal.role] < RANK[level]) throw forbidden();
        if (principal.kind === "session" && !SAFE_METHODS.has(request.method)) {
          checkCsrf(options.secretKey, principal.sessionIdHash, request, body);
        }
      };
      (transform as unknown as Record<symbol, Access>)[ACCESS_MARKER] = level;
      return {
        transform,
        resolve: ({ request }: { request: Request }) => ({ principal: principals.get(request) }),
      };
    },
  });
  return Object.assign(plugin, {
    /** Who made `request`, once its route's access check passed (for hooks such as the audit log). */
    principalOf: (request: Request) => principals.get(request),
    /**
     * Who made `request`, also when it was refused before its access check ran (a NUL in a form field
     * is refused at the edge): its credentials resolved now. For the audit log of refused requests only.
     */
    identify: async (request: Request) =>
      principals.get(request) ?? (await options.resolvePrincipal(request)),
  });
}

/** The access level each route of an app declared (undefined: none), keyed "METHOD /path". */
export function declaredAccess(app: { routes: { method: string; path: string; hooks: unknown }[] }) {
  const result = new Map<string, Access | undefined>();
  for (const route of app.routes) {
    const hooks = route.hooks as { transform?: unknown[] };
    let level: Access | undefined;
    for (const hook of hooks.transform ?? []) {
      const fn = (hook as { fn?: unknown }).fn ?? hook;
      const marked = (fn as Record<symbol, Access | undefined>)[ACCESS_MARKER];
      if (marked) level = marked;
    }
    result.set(`${route.method} ${route.path}`, level);
  }
  return result;
}

/** Whether the principal may change things (operator or admin), for pages that hide their actions. */
export function canOperate(principal: Principal | undefined): boolean {
  return principal !== undefined && RANK[principal.role] >= RANK.operator;
}

/** Who did something, as history and audit columns show it. */
export function principalLabel(principal: Principal | undefined): string | undefined {
  if (!principal) return undefined;
  return principal.kind === "session" ? principal.email : `token ${principal.name}`;
}

/** The `Set-Cookie` value for the session cookie holding `token`, or clearing it (`token` undefined). */
export function sessionCookie(
  token: string | undefined,
  options: { https: boolean; ttlHours: number },
): string {
  return consoleCookie(
    SESSION_COOKIE,
    token ?? "",
    options.https,
    token === undefined ? 0 : options.ttlHours * 3600,
  );
}
