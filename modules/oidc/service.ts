/**
 * Single sign-on with OpenID Connect: the feature's door. A sign-in starts at the provider and ends
 * here with an Outpost session, or a refusal; each outcome is in the audit log.
 */
import { recordAudit } from "../audit/service";
import { createSession } from "../operators/service";
import type { Database } from "../platform/database";
import { AppError } from "../platform/errors";
import type { OidcConfig } from "../platform/sso-config";
import { createOidcClient, type OidcClaims, type OidcClient, VERIFY_FAILED } from "./client";
import { beginSignIn, takeSignIn } from "./flow";
import { signInIdentity } from "./identities";

export { FLOW_MINUTES } from "./flow";
export { linkedIdentity } from "./identities";

export interface SingleSignOn {
  oidc: OidcConfig;
  client: OidcClient;
  /** Where the provider sends the browser back: BASE_URL + /auth/oidc/callback. */
  redirectUri: string;
}

export const CALLBACK_PATH = "/auth/oidc/callback";

export function singleSignOn(oidc: OidcConfig, baseUrl: string): SingleSignOn {
  const redirectUri = `${baseUrl}${CALLBACK_PATH}`;
  return { oidc, client: createOidcClient(oidc, redirectUri), redirectUri };
}

/** Starts a sign-in; with `linkOperatorId` (a signed-in operator's own request), a link to that operator. */
export async function startOidcSignIn(
  database: Database,
  sso: SingleSignOn,
  next: string,
  linkOperatorId?: string,
) {
  return beginSignIn(database.db, sso.client, next, linkOperatorId);
}

export interface CallbackInput {
  /** The flow cookie's value (undefined when the browser has none). */
  flowId: string | undefined;
  /** The query string the provider sent back (`?code=…&state=…`). */
  search: string;
  address: string;
  userAgent: string | undefined;
  sessionTtlHours: number;
}

/**
 * Finishes a sign-in: the pending flow of this browser, the code exchange with its checks (state,
 * nonce, PKCE, ID token), the operator, a session. Returns the session token and where to go; throws
 * an AppError with a message for the person (`oidc_failed`, `oidc_unmapped`, …) after auditing it.
 */
export async function finishOidcSignIn(
  database: Database,
  sso: SingleSignOn,
  input: CallbackInput,
): Promise<{ sessionToken: string; next: string }> {
  const audit = (event: {
    actor?: string;
    action: string;
    status: number;
    target?: string;
    details?: object;
  }) =>
    recordAudit(database, {
      actorKind: event.status < 400 ? "operator" : "anonymous",
      actor: event.actor ?? "(unknown)",
      action: event.action,
      target: event.target,
      status: event.status,
      address: input.address,
      details: { issuer: sso.oidc.issuer, ...event.details },
    });
  let claims: OidcClaims | undefined;
  try {
    const pending = input.flowId ? await takeSignIn(database.db, input.flowId) : undefined;
    if (!pending) {
      throw new AppError(400, "oidc_failed", VERIFY_FAILED, {
        reason: "no pending sign-in for this browser",
      });
    }
    claims = await sso.client.finish(new URL(`${sso.redirectUri}${input.search}`), pending);
    const identity = await signInIdentity(database.db, sso.oidc, claims, pending.linkOperatorId ?? undefined);
    const { operator } = identity;
    const recordOperator = (action: string, status: number, details: object) =>
      audit({ actor: operator.email, action, status, target: `operator:${operator.id}`, details });
    if (identity.created) {
      await recordOperator("operator.create", 201, { via: "oidc", role: operator.role, subject: claims.sub });
    }
    if (identity.previousRole) {
      await recordOperator("operator.role", 200, {
        via: "oidc",
        from: identity.previousRole,
        role: operator.role,
      });
    }
    if (identity.linked) await recordOperator("oidc.link", 200, { subject: claims.sub });
    await recordOperator("oidc.sign_in", 303, { subject: claims.sub });
    const sessionToken = await createSession(database.db, {
      operatorId: operator.id,
      ttlHours: input.sessionTtlHours,
      address: input.address,
      userAgent: input.userAgent,
    });
    return { sessionToken, next: pending.next };
  } catch (error) {
    if (error instanceof AppError) {
      const who = claims && (typeof claims.email === "string" ? claims.email : `${claims.sub}`);
      await audit({
        actor: who,
        action:
          error.code === "oidc_failed" || error.code === "oidc_unavailable"
            ? "oidc.sign_in_failed"
            : "oidc.sign_in_refused",
        status: error.status,
        details: {
          code: error.code,
          ...(claims ? { subject: claims.sub } : {}),
          ...(error.details as object),
        },
      });
    }
    throw error;
  }
}

/** Where "Also sign out of <provider>" leads, when the provider offers RP-initiated logout. */
export async function providerSignOutUrl(sso: SingleSignOn, returnTo: string): Promise<URL | undefined> {
  try {
    return await sso.client.endSessionUrl(returnTo);
  } catch {
    return undefined; // the provider is unreachable: Outpost's own sign-out is done anyway
  }
}
