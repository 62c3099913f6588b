/**
 * The OpenID Connect relying party, on openid-client: discovery from the issuer (once per process,
 * retried after a failure), the authorization URL with PKCE, state and nonce, and the code exchange
 * that checks them and the ID token's signature, issuer, audience and expiry.
 */
import * as client from "openid-client";
import { AppError } from "../platform/errors";
import type { OidcConfig } from "../platform/sso-config";

/** What the person reads when a check of the provider's answer fails (the reason goes to the audit log). */
export const VERIFY_FAILED = "The sign-in could not be verified. Start again from the sign-in page.";

export interface FlowSecrets {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The claims Outpost reads, from the ID token and, for what it lacks, the userinfo endpoint. */
export type OidcClaims = Record<string, unknown> & { iss: string; sub: string };

export interface OidcClient {
  authorizationUrl(secrets: FlowSecrets): Promise<URL>;
  /** Exchanges the code in `callbackUrl`; throws 400 `oidc_failed` when any check fails. */
  finish(callbackUrl: URL, secrets: FlowSecrets): Promise<OidcClaims>;
  /** The provider's end_session_endpoint (RP-initiated logout) back to `returnTo`, when it has one. */
  endSessionUrl(returnTo: string): Promise<URL | undefined>;
}

function unavailable(error: unknown): AppError {
  return new AppError(
    502,
    "oidc_unavailable",
    "The sign-in provider could not be reached. Try again, or sign in with a password if you may.",
    { cause: String(error) },
  );
}

/** A check that refused the answer (state, nonce, signature, the provider's own error), not the network. */
function isCheckFailure(error: unknown): boolean {
  return (
    error instanceof client.ClientError ||
    error instanceof client.AuthorizationResponseError ||
    error instanceof client.ResponseBodyError
  );
}

/** The messages of an error and its causes, never their data (which may hold tokens). */
function failureReason(error: unknown): string {
  const messages: string[] = [];
  for (let current = error; current instanceof Error && messages.length < 4; current = current.cause) {
    messages.push(current.message);
  }
  return messages.join(": ");
}

export function createOidcClient(oidc: OidcConfig, redirectUri: string): OidcClient {
  let discovered: Promise<client.Configuration> | undefined;

  function configuration(): Promise<client.Configuration> {
    discovered ??= client
      .discovery(new URL(oidc.issuer), oidc.clientId, oidc.clientSecret, undefined, {
        // Only loopback issuers may be http (checked in sso-config.ts): tests and labs.
        execute: oidc.issuer.startsWith("http:") ? [client.allowInsecureRequests] : [],
        timeout: 10,
      })
      .catch((error) => {
        discovered = undefined; // the next sign-in tries again
        throw unavailable(error);
      });
    return discovered;
  }

  return {
    async authorizationUrl(secrets) {
      const config = await configuration();
      return client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: oidc.scopes,
        state: secrets.state,
        nonce: secrets.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(secrets.codeVerifier),
        code_challenge_method: "S256",
      });
    },

    async finish(callbackUrl, secrets) {
      const config = await configuration();
      let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
      try {
        tokens = await client.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: secrets.codeVerifier,
          expectedState: secrets.state,
          expectedNonce: secrets.nonce,
          idTokenExpected: true,
        });
      } catch (error) {
        if (!isCheckFailure(error)) throw unavailable(error);
        if (error instanceof client.AuthorizationResponseError) {
          // The provider's own refusal (the person cancelled, or is not allowed to use this client).
          throw new AppError(
            400,
            "oidc_failed",
            `${oidc.displayName} did not sign you in (${error.error}).`,
            {
              reason: error.error_description ?? error.error,
            },
          );
        }
        throw new AppError(400, "oidc_failed", VERIFY_FAILED, {
          reason: failureReason(error),
          check: (error as client.ClientError).code,
        });
      }
      const idToken = tokens.claims()!;
      const claims: OidcClaims = { ...idToken, iss: idToken.iss, sub: idToken.sub };
      // Many providers put email and groups only in userinfo; the ID token's subject must match it.
      const missing = ["email", oidc.roleClaim].some((name) => claims[name] === undefined);
      if (missing && config.serverMetadata().userinfo_endpoint) {
        const info = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
        for (const [name, value] of Object.entries(info))
          if (claims[name] === undefined) claims[name] = value;
      }
      return claims;
    },

    async endSessionUrl(returnTo) {
      const config = await configuration();
      if (!config.serverMetadata().end_session_endpoint) return undefined;
      return client.buildEndSessionUrl(config, {
        client_id: oidc.clientId,
        post_logout_redirect_uri: returnTo,
      });
    },
  };
}
