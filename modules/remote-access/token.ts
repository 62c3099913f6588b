import { constantTimeEqual, hmacHex } from "../platform/crypto";

/**
 * Short credentials signed with SECRET_KEY (HMAC-SHA256): `<base64url(JSON claims)>.<hex mac>`.
 * Each kind has its own purpose string in the MAC, so a token of one kind never passes as another
 * (a cookie is not a tunnel token, a mux credential is not a cookie, a terminal socket token is neither;
 * `front` marks a request one HTTP front forwarded to the tunnel process holding its device).
 */
export type CredentialKind = "tunnel" | "cookie" | "mux" | "socket" | "front";

export interface Claims {
  /** Device id (uuid). */
  d: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
  /** Lease id, when bound to one. */
  l?: string;
  /** Operator id, when bound to one. */
  o?: string;
}

/** The signature part of a credential of `kind` whose claims part is `body`. */
export function signatureOf(secret: string, kind: CredentialKind, body: string): string {
  return hmacHex(secret, `outpost-remote-access:${kind}:${body}`);
}

export function signCredential(secret: string, kind: CredentialKind, claims: Claims): string {
  const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
  return `${body}.${signatureOf(secret, kind, body)}`;
}

/** The claims of a valid, unexpired credential of `kind`, or undefined (forged, expired, malformed). */
export function verifyCredential(
  secret: string,
  kind: CredentialKind,
  token: string | undefined,
  nowMs = Date.now(),
): Claims | undefined {
  if (!token || token.length > 1024) return undefined;
  const dot = token.indexOf(".");
  if (dot <= 0) return undefined;
  const body = token.slice(0, dot);
  if (!constantTimeEqual(token.slice(dot + 1), signatureOf(secret, kind, body))) {
    return undefined;
  }
  return unexpiredClaims(body, nowMs);
}

/**
 * The claims a credential's body carries if they are well formed and unexpired. It checks no signature:
 * only for a caller that proved the signature another way (the data plane's keyed proofs).
 */
export function unexpiredClaims(body: string, nowMs = Date.now()): Claims | undefined {
  let claims: Claims;
  try {
    claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Claims;
  } catch {
    return undefined;
  }
  if (typeof claims?.d !== "string" || typeof claims.exp !== "number") return undefined;
  if (claims.exp * 1000 <= nowMs) return undefined;
  return claims;
}
