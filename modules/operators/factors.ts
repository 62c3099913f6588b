/**
 * An operator's second factors as a whole: listing, naming, removal, an admin's reset, and the
 * one-time recovery codes (stored as SHA-256 only, shown once when generated).
 */
import { randomBytes } from "node:crypto";
import { and, asc, count, eq, isNotNull, isNull } from "drizzle-orm";
import { sha256Hex } from "../platform/crypto";
import type { Db } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { operatorFactors, operators, recoveryCodes } from "./schema";

export const FACTOR_NAME_MAX = 64;
export const RECOVERY_CODE_COUNT = 10;

export type FactorKind = "totp" | "webauthn";

export interface FactorView {
  id: string;
  kind: FactorKind;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** A factor's name, trimmed; `fallback` when left empty. */
export function checkFactorName(raw: string, fallback: string): string {
  const name = raw.trim() || fallback;
  if (name.length > FACTOR_NAME_MAX) {
    throw badRequest(`Give the factor a name of at most ${FACTOR_NAME_MAX} characters`);
  }
  return name;
}

/** The operator's confirmed factors, oldest first. */
export async function listFactors(db: Db, operatorId: string): Promise<FactorView[]> {
  return db
    .select({
      id: operatorFactors.id,
      kind: operatorFactors.kind,
      name: operatorFactors.name,
      createdAt: operatorFactors.createdAt,
      lastUsedAt: operatorFactors.lastUsedAt,
    })
    .from(operatorFactors)
    .where(and(eq(operatorFactors.operatorId, operatorId), isNotNull(operatorFactors.confirmedAt)))
    .orderBy(asc(operatorFactors.createdAt));
}

/** Confirmed factors per operator (operators without any are absent), for the Settings page. */
export async function factorCounts(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .select({ operatorId: operatorFactors.operatorId, n: count() })
    .from(operatorFactors)
    .where(isNotNull(operatorFactors.confirmedAt))
    .groupBy(operatorFactors.operatorId);
  return new Map(rows.map((row) => [row.operatorId, row.n]));
}

function factorNotFound(): AppError {
  return new AppError(404, "factor_not_found", "No such second factor on your account");
}

export async function renameFactor(
  db: Db,
  input: { operatorId: string; factorId: string; name: string },
): Promise<FactorView> {
  const name = checkFactorName(input.name, "");
  if (!name) throw badRequest("Give the factor a name");
  const [row] = await db
    .update(operatorFactors)
    .set({ name })
    .where(and(eq(operatorFactors.id, input.factorId), eq(operatorFactors.operatorId, input.operatorId)))
    .returning();
  if (!row) throw factorNotFound();
  return row;
}

/**
 * Removes one factor. When a second factor is required of the operator's role, the last one stays
 * (409): they would be sent to enrol at their next sign-in anyway. Removing the last factor also
 * drops the recovery codes, which stand in for a factor and mean nothing without one.
 */
export async function removeFactor(
  db: Db,
  input: { operatorId: string; factorId: string; required: boolean },
): Promise<FactorView> {
  return db.transaction(async (tx) => {
    const factors = await listFactors(tx as unknown as Db, input.operatorId);
    const factor = factors.find((f) => f.id === input.factorId);
    if (!factor) throw factorNotFound();
    if (input.required && factors.length === 1) {
      throw new AppError(
        409,
        "second_factor_required",
        "Your role requires a second factor: add another one before removing this one.",
      );
    }
    await tx.delete(operatorFactors).where(eq(operatorFactors.id, factor.id));
    if (factors.length === 1)
      await tx.delete(recoveryCodes).where(eq(recoveryCodes.operatorId, input.operatorId));
    return factor;
  });
}

/** An admin's reset: every factor and recovery code of the operator goes. Returns how many factors. */
export async function resetFactors(db: Db, operatorId: string): Promise<number> {
  return db.transaction(async (tx) => {
    const removed = await tx
      .delete(operatorFactors)
      .where(eq(operatorFactors.operatorId, operatorId))
      .returning({ id: operatorFactors.id });
    await tx.delete(recoveryCodes).where(eq(recoveryCodes.operatorId, operatorId));
    return removed.length;
  });
}

/** The command line's reset (an admin who lost every factor): by email; undefined for an unknown email. */
export async function resetFactorsByEmail(db: Db, email: string): Promise<number | undefined> {
  const [row] = await db
    .select({ id: operators.id })
    .from(operators)
    .where(eq(operators.email, email.trim().toLowerCase()));
  return row ? resetFactors(db, row.id) : undefined;
}

// ---------------------------------------------------------------- recovery codes

const CODE_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"; // no 0/o, 1/l/i

/** `xxxxx-xxxxx`: 10 characters of a 31-letter alphabet, ~49 bits. */
function newRecoveryCode(): string {
  const bytes = randomBytes(10);
  const letters = [...bytes].map((b) => CODE_ALPHABET[b % CODE_ALPHABET.length]).join("");
  return `${letters.slice(0, 5)}-${letters.slice(5)}`;
}

function recoveryHash(code: string): string {
  return sha256Hex(`outpost-recovery:${code.toLowerCase().replace(/[^a-z0-9]/g, "")}`);
}

/** A new set of codes replacing any earlier set; the plain codes are returned once, never stored. */
export async function generateRecoveryCodes(db: Db, operatorId: string): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await db.transaction(async (tx) => {
    await tx.delete(recoveryCodes).where(eq(recoveryCodes.operatorId, operatorId));
    await tx
      .insert(recoveryCodes)
      .values(codes.map((code) => ({ operatorId, codeHash: recoveryHash(code) })));
  });
  return codes;
}

/** Uses up a recovery code (true once, false for a wrong or used one). */
export async function useRecoveryCode(db: Db, operatorId: string, code: string): Promise<boolean> {
  if (code.length > 64) return false;
  const used = await db
    .update(recoveryCodes)
    .set({ usedAt: new Date() })
    .where(
      and(
        eq(recoveryCodes.operatorId, operatorId),
        eq(recoveryCodes.codeHash, recoveryHash(code)),
        isNull(recoveryCodes.usedAt),
      ),
    )
    .returning({ id: recoveryCodes.id });
  return used.length > 0;
}

export async function recoveryCodesLeft(db: Db, operatorId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(recoveryCodes)
    .where(and(eq(recoveryCodes.operatorId, operatorId), isNull(recoveryCodes.usedAt)));
  return row?.n ?? 0;
}
