/**
 * Single sign-on configuration (OIDC_*, PASSWORD_SIGN_IN, BREAK_GLASS_ADMIN_EMAIL), read by loadConfig.
 * The feature itself lives in modules/oidc; the sign-in page and the password route only need to know
 * whether SSO is on, its name, and who may still use a password.
 */
import type { ConfigError } from "./config";

export type SsoRole = "admin" | "operator" | "viewer";

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Always includes `openid`. */
  scopes: string;
  /** Shown on the sign-in page: "Sign in with <displayName>". */
  displayName: string;
  /** The claim whose value(s) decide the role (a string or an array of strings). */
  roleClaim: string;
  /** Claim value → role; a person with several mapped values gets the highest. */
  roleMap: Record<string, SsoRole>;
}

export interface SsoConfig {
  oidc: OidcConfig | undefined;
  /** false: only the break-glass admin signs in with a password. */
  passwordSignIn: boolean;
  breakGlassAdminEmail: string | undefined;
}

type Env = Record<string, string | undefined>;
const ROLES: readonly string[] = ["admin", "operator", "viewer"];
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

function issuerUrl(raw: string, fail: (message: string) => ConfigError): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw fail(`OIDC_ISSUER must be a URL (got "${raw}")`);
  }
  // Tokens and the client secret cross this connection: plain http only to this machine (tests, labs).
  if (url.protocol !== "https:" && !(url.protocol === "http:" && LOOPBACK.has(url.hostname))) {
    throw fail(`OIDC_ISSUER must be an https:// URL (http:// only on loopback) (got "${raw}")`);
  }
  return raw.replace(/\/+$/, "");
}

function roleMap(raw: string | undefined, fail: (message: string) => ConfigError): Record<string, SsoRole> {
  const example = `e.g. {"outpost-admins":"admin","ops":"operator"}`;
  if (raw === undefined) throw fail(`OIDC_ROLE_MAP is required with OIDC_ISSUER (${example})`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw fail(`OIDC_ROLE_MAP must be a JSON object of claim value to role (${example})`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed) || Object.keys(parsed).length === 0) {
    throw fail(`OIDC_ROLE_MAP must be a non-empty JSON object of claim value to role (${example})`);
  }
  for (const [value, role] of Object.entries(parsed)) {
    if (typeof role !== "string" || !ROLES.includes(role)) {
      throw fail(`OIDC_ROLE_MAP maps "${value}" to "${String(role)}": use admin, operator or viewer`);
    }
  }
  return parsed as Record<string, SsoRole>;
}

function oidcConfig(env: Env, fail: (message: string) => ConfigError): OidcConfig | undefined {
  const issuer = text(env, "OIDC_ISSUER");
  if (issuer === undefined) {
    const stray = ["OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_ROLE_MAP"].find((name) => text(env, name));
    if (stray) throw fail(`${stray} is set but OIDC_ISSUER is not`);
    return undefined;
  }
  const clientId = text(env, "OIDC_CLIENT_ID");
  const clientSecret = text(env, "OIDC_CLIENT_SECRET");
  if (!clientId || !clientSecret) throw fail("OIDC_ISSUER needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET");
  const scopes = new Set(
    (text(env, "OIDC_SCOPES") ?? "openid email profile").split(/[\s,]+/).filter(Boolean),
  );
  scopes.add("openid");
  return {
    issuer: issuerUrl(issuer, fail),
    clientId,
    clientSecret,
    scopes: [...scopes].join(" "),
    displayName: (text(env, "OIDC_DISPLAY_NAME") ?? "single sign-on").slice(0, 60),
    roleClaim: text(env, "OIDC_ROLE_CLAIM") ?? "groups",
    roleMap: roleMap(text(env, "OIDC_ROLE_MAP"), fail),
  };
}

export function loadSsoConfig(env: Env, fail: (message: string) => ConfigError): SsoConfig {
  const oidc = oidcConfig(env, fail);
  const rawPassword = text(env, "PASSWORD_SIGN_IN")?.toLowerCase() ?? "true";
  if (!["true", "false"].includes(rawPassword)) {
    throw fail(`PASSWORD_SIGN_IN must be true or false (got "${rawPassword}")`);
  }
  const passwordSignIn = rawPassword === "true";
  const breakGlassAdminEmail = text(env, "BREAK_GLASS_ADMIN_EMAIL")?.toLowerCase();
  if (!passwordSignIn && !oidc)
    throw fail("PASSWORD_SIGN_IN=false needs OIDC_ISSUER (no way to sign in otherwise)");
  if (!passwordSignIn && !breakGlassAdminEmail) {
    throw fail(
      "PASSWORD_SIGN_IN=false needs BREAK_GLASS_ADMIN_EMAIL: the admin who can still sign in when the provider is down",
    );
  }
  return { oidc, passwordSignIn, breakGlassAdminEmail };
}

/**
 * Whether this operator may sign in with a password: everyone while PASSWORD_SIGN_IN is on; otherwise
 * only the break-glass admin (an admin whose email is BREAK_GLASS_ADMIN_EMAIL).
 */
export function passwordSignInAllowed(sso: SsoConfig, operator: { email: string; role: string }): boolean {
  if (sso.passwordSignIn) return true;
  return operator.role === "admin" && operator.email === sso.breakGlassAdminEmail;
}

/**
 * Origins a console form may lead to for single sign-on (CSP form-action): linking a provider account
 * is a form post that redirects to the provider's authorization endpoint, on the issuer's origin.
 */
export function ssoFormTargets(sso: SsoConfig): string[] {
  return sso.oidc ? [new URL(sso.oidc.issuer).origin] : [];
}
