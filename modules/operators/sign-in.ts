/**
 * Sign-in in stages. A right password alone opens a pending session (stage `factor`, or `enrol` when
 * the role requires a second factor the operator does not have yet) that lasts minutes and grants
 * nothing but that step: `resolveSession` only knows signed-in sessions. The second factor (or the
 * enrolment) replaces it with a signed-in session under a new cookie value.
 */
import { and, eq, gt, isNull, ne, sql } from "drizzle-orm";
import type { Clock } from "../../shared/clock";
import { sha256Hex } from "../platform/crypto";
import type { Db } from "../platform/database";
import { AppError } from "../platform/errors";
import { listFactors, useRecoveryCode } from "./factors";
import { type RelyingParty, verifyPasskey } from "./passkeys";
import { factorRequired } from "./policy";
import { operatorSessions, operators } from "./schema";
import {
  checkSignInThrottle,
  createSession,
  markSignedIn,
  type OperatorView,
  recordSignInFailure,
  type SessionStage,
} from "./service";
import { verifyTotpCode } from "./totp";

/** How long the password step stays good for the second factor or the enrolment. */
export const PENDING_SIGN_IN_MINUTES = 10;

export interface SessionRequest {
  ttlHours: number;
  address: string;
  userAgent?: string;
}

/** After a right password: a signed-in session, or a pending one waiting for the next step. */
export async function beginSignIn(
  db: Db,
  operator: OperatorView,
  request: SessionRequest,
): Promise<{ token: string; stage: SessionStage }> {
  const factors = await listFactors(db, operator.id);
  const stage: SessionStage =
    factors.length > 0 ? "factor" : (await factorRequired(db, operator.role)) ? "enrol" : "signed_in";
  if (stage === "signed_in") {
    await markSignedIn(db, operator, request.address);
    return { token: await createSession(db, { operatorId: operator.id, ...request }), stage };
  }
  const token = await createSession(db, {
    operatorId: operator.id,
    address: request.address,
    userAgent: request.userAgent,
    ttlHours: PENDING_SIGN_IN_MINUTES / 60,
    stage,
  });
  return { token, stage };
}

export interface PendingSignIn {
  idHash: string;
  stage: "factor" | "enrol";
  operator: OperatorView;
}

/** The pending sign-in behind a cookie value (never a signed-in session). */
export async function resolvePendingSignIn(db: Db, token: string): Promise<PendingSignIn | undefined> {
  const idHash = sha256Hex(token);
  const [row] = await db
    .select({ stage: operatorSessions.stage, id: operators.id, email: operators.email, role: operators.role })
    .from(operatorSessions)
    .innerJoin(operators, eq(operators.id, operatorSessions.operatorId))
    .where(
      and(
        eq(operatorSessions.idHash, idHash),
        ne(operatorSessions.stage, "signed_in"),
        gt(operatorSessions.expiresAt, sql`now()`),
        isNull(operators.disabledAt),
      ),
    );
  if (!row || row.stage === "signed_in") return undefined;
  return { idHash, stage: row.stage, operator: { id: row.id, email: row.email, role: row.role } };
}

/** Ends the pending step and signs in for real, under a new cookie value; returns it. */
export async function completeSignIn(
  db: Db,
  pending: PendingSignIn,
  request: SessionRequest,
): Promise<string> {
  await db.delete(operatorSessions).where(eq(operatorSessions.idHash, pending.idHash));
  await markSignedIn(db, pending.operator, request.address);
  return createSession(db, { operatorId: pending.operator.id, ...request, factorVerifiedAt: new Date() });
}

export const FACTOR_METHODS = ["totp", "passkey", "recovery"] as const;
export type FactorMethod = (typeof FACTOR_METHODS)[number];

export interface FactorAttempt {
  operator: OperatorView;
  sessionIdHash: string;
  method: string;
  /** A TOTP or recovery code. */
  code?: string;
  /** A WebAuthn assertion (JSON). */
  response?: string;
  address: string;
}

/**
 * Checks a second factor (sign-in or a fresh-factor prompt). Failures count against the same sign-in
 * limits as wrong passwords (email from address, address, email), and a locked-out pair gets 429
 * before any check. Returns the method that passed; throws 401 `invalid_factor` otherwise.
 */
export async function verifySecondFactor(
  db: Db,
  deps: { secretKey: string; rp: RelyingParty; clock: Pick<Clock, "now"> },
  attempt: FactorAttempt,
): Promise<FactorMethod> {
  const { operator } = attempt;
  await checkSignInThrottle(db, operator.email, attempt.address);
  const code = (attempt.code ?? "").slice(0, 64);
  let passed = false;
  if (attempt.method === "totp") {
    passed =
      (await verifyTotpCode(db, deps.secretKey, { operatorId: operator.id, code, now: deps.clock.now() })) !==
      undefined;
  } else if (attempt.method === "recovery") {
    passed = await useRecoveryCode(db, operator.id, code);
  } else if (attempt.method === "passkey") {
    const response = attempt.response ?? "";
    passed =
      (await verifyPasskey(db, deps.rp, {
        operatorId: operator.id,
        sessionIdHash: attempt.sessionIdHash,
        response,
      })) !== undefined;
  }
  if (!passed) {
    await recordSignInFailure(db, operator.email, attempt.address);
    throw new AppError(
      401,
      "invalid_factor",
      "That was not accepted: check the code or try your passkey again.",
    );
  }
  return attempt.method as FactorMethod;
}

/** This session just proved a second factor (a fresh-factor prompt, or a factor added). */
export async function markFactorVerified(db: Db, sessionIdHash: string): Promise<void> {
  await db
    .update(operatorSessions)
    .set({ factorVerifiedAt: new Date() })
    .where(eq(operatorSessions.idHash, sessionIdHash));
}
