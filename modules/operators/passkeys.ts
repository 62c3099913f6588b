/**
 * WebAuthn factors (passkeys and security keys). The relying party is the console itself: its id is
 * BASE_URL's host name and its origin BASE_URL's origin. Each ceremony's challenge is kept on the
 * session that asked for it (pending or signed in), for 5 minutes and one use.
 */
import {
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from "@simplewebauthn/server";
import { and, eq, isNotNull, sql } from "drizzle-orm";
import type { Db } from "../platform/database";
import { AppError } from "../platform/errors";
import { checkFactorName } from "./factors";
import { operatorFactors, operatorSessions } from "./schema";

export interface RelyingParty {
  id: string;
  name: string;
  origin: string;
}

/** The relying party BASE_URL names (`localhost` works over plain http in browsers; an IP address does not). */
export function relyingParty(baseUrl: string): RelyingParty {
  const url = new URL(baseUrl);
  return { id: url.hostname, name: "Outpost", origin: url.origin };
}

const CHALLENGE_MINUTES = 5;

async function keepChallenge(db: Db, sessionIdHash: string, challenge: string): Promise<void> {
  await db
    .update(operatorSessions)
    .set({ challenge, challengeExpiresAt: sql`now() + make_interval(mins => ${CHALLENGE_MINUTES})` })
    .where(eq(operatorSessions.idHash, sessionIdHash));
}

/** The session's live challenge, cleared as it is read (a response answers one challenge once). */
async function takeChallenge(db: Db, sessionIdHash: string): Promise<string | undefined> {
  const rows = await db.execute<{ challenge: string | null }>(sql`
    update ${operatorSessions} s set challenge = null, challenge_expires_at = null
    from (select challenge, challenge_expires_at from ${operatorSessions}
          where id_hash = ${sessionIdHash} for update) old
    where s.id_hash = ${sessionIdHash} and old.challenge_expires_at > now()
    returning old.challenge`);
  return rows[0]?.challenge ?? undefined;
}

function passkeyRefused(message = "The passkey was not accepted. Try again."): AppError {
  return new AppError(400, "invalid_passkey", message);
}

function parseResponse<T>(raw: string): T {
  try {
    const value = JSON.parse(raw) as unknown;
    if (value && typeof value === "object" && typeof (value as { id?: unknown }).id === "string")
      return value as T;
  } catch {}
  throw passkeyRefused("The browser's answer was not a WebAuthn response.");
}

async function credentialsOf(db: Db, operatorId: string) {
  return db
    .select()
    .from(operatorFactors)
    .where(
      and(
        eq(operatorFactors.operatorId, operatorId),
        eq(operatorFactors.kind, "webauthn"),
        isNotNull(operatorFactors.confirmedAt),
      ),
    );
}

const transportsOf = (row: { transports: string[] | null }) =>
  (row.transports ?? []) as AuthenticatorTransport[];

/** Options for `navigator.credentials.create()`; the operator's existing keys are excluded. */
export async function passkeyRegistrationOptions(
  db: Db,
  rp: RelyingParty,
  input: { operatorId: string; email: string; sessionIdHash: string },
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const existing = await credentialsOf(db, input.operatorId);
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: input.email,
    userID: new TextEncoder().encode(input.operatorId),
    attestationType: "none",
    excludeCredentials: existing.map((row) => ({ id: row.credentialId!, transports: transportsOf(row) })),
    authenticatorSelection: { residentKey: "preferred", userVerification: "preferred" },
  });
  await keepChallenge(db, input.sessionIdHash, options.challenge);
  return options;
}

/** Verifies the browser's registration and stores the credential as a confirmed factor. */
export async function registerPasskey(
  db: Db,
  rp: RelyingParty,
  input: { operatorId: string; sessionIdHash: string; name: string; response: string },
): Promise<{ id: string; name: string }> {
  const name = checkFactorName(input.name, "Passkey");
  const response = parseResponse<RegistrationResponseJSON>(input.response);
  const challenge = await takeChallenge(db, input.sessionIdHash);
  if (!challenge) throw passkeyRefused("The passkey request expired. Reload the page and try again.");
  let verification: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verification = await verifyRegistrationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: false,
    });
  } catch {
    throw passkeyRefused();
  }
  if (!verification.verified) throw passkeyRefused();
  const { credential } = verification.registrationInfo;
  const [row] = await db
    .insert(operatorFactors)
    .values({
      operatorId: input.operatorId,
      kind: "webauthn",
      name,
      credentialId: credential.id,
      publicKey: Buffer.from(credential.publicKey).toString("base64url"),
      signCount: credential.counter,
      transports: credential.transports ?? [],
      confirmedAt: new Date(),
    })
    .onConflictDoNothing({ target: operatorFactors.credentialId })
    .returning({ id: operatorFactors.id, name: operatorFactors.name });
  if (!row) throw new AppError(409, "passkey_exists", "This passkey is already registered.");
  return row;
}

/** Options for `navigator.credentials.get()`, or undefined when the operator has no passkey. */
export async function passkeyAuthenticationOptions(
  db: Db,
  rp: RelyingParty,
  input: { operatorId: string; sessionIdHash: string },
): Promise<PublicKeyCredentialRequestOptionsJSON | undefined> {
  const credentials = await credentialsOf(db, input.operatorId);
  if (credentials.length === 0) return undefined;
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    allowCredentials: credentials.map((row) => ({ id: row.credentialId!, transports: transportsOf(row) })),
    userVerification: "preferred",
  });
  await keepChallenge(db, input.sessionIdHash, options.challenge);
  return options;
}

/** Checks a passkey assertion of one of the operator's credentials; the factor's id when it passes. */
export async function verifyPasskey(
  db: Db,
  rp: RelyingParty,
  input: { operatorId: string; sessionIdHash: string; response: string },
): Promise<{ id: string } | undefined> {
  let response: AuthenticationResponseJSON;
  try {
    response = parseResponse<AuthenticationResponseJSON>(input.response);
  } catch {
    return undefined;
  }
  const challenge = await takeChallenge(db, input.sessionIdHash);
  const row = (await credentialsOf(db, input.operatorId)).find((c) => c.credentialId === response.id);
  if (!challenge || !row) return undefined;
  try {
    const verification = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: {
        id: row.credentialId!,
        publicKey: Buffer.from(row.publicKey!, "base64url"),
        counter: row.signCount ?? 0,
        transports: transportsOf(row),
      },
      requireUserVerification: false,
    });
    if (!verification.verified) return undefined;
    await db
      .update(operatorFactors)
      .set({ signCount: verification.authenticationInfo.newCounter, lastUsedAt: new Date() })
      .where(eq(operatorFactors.id, row.id));
    return { id: row.id };
  } catch {
    return undefined;
  }
}
