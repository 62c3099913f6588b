/**
 * Sign-ins under way. Starting one keeps its state, nonce and PKCE verifier server-side under a random
 * flow id that only the browser's cookie holds; the callback takes them back exactly once, so a callback
 * replayed, finished in another browser, or older than FLOW_MINUTES is refused.
 */
import { and, eq, gt, lt, sql } from "drizzle-orm";
import { randomToken, sha256Hex } from "../platform/crypto";
import type { Db } from "../platform/database";
import type { FlowSecrets, OidcClient } from "./client";
import { oidcSignIns } from "./schema";

export const FLOW_MINUTES = 10;

export interface PendingSignIn extends FlowSecrets {
  next: string;
  /** Set when a signed-in operator asked to link their provider account. */
  linkOperatorId: string | null;
}

export async function beginSignIn(
  db: Db,
  client: OidcClient,
  next: string,
  linkOperatorId?: string,
): Promise<{ flowId: string; authorizationUrl: URL }> {
  const secrets: FlowSecrets = {
    state: randomToken(32),
    nonce: randomToken(32),
    codeVerifier: randomToken(48),
  };
  // Discovery first: a provider that cannot be reached leaves nothing behind.
  const authorizationUrl = await client.authorizationUrl(secrets);
  const flowId = randomToken(32);
  await db.delete(oidcSignIns).where(lt(oidcSignIns.expiresAt, sql`now()`));
  await db.insert(oidcSignIns).values({
    flowHash: sha256Hex(flowId),
    ...secrets,
    next,
    linkOperatorId,
    expiresAt: new Date(Date.now() + FLOW_MINUTES * 60_000),
  });
  return { flowId, authorizationUrl };
}

/** The pending sign-in of this flow id, removed as it is read; undefined when unknown or expired. */
export async function takeSignIn(db: Db, flowId: string): Promise<PendingSignIn | undefined> {
  const [row] = await db
    .delete(oidcSignIns)
    .where(and(eq(oidcSignIns.flowHash, sha256Hex(flowId)), gt(oidcSignIns.expiresAt, sql`now()`)))
    .returning();
  return row && { ...row };
}
