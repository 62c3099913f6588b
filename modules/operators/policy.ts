/**
 * The second-factor policy per role (Settings): whether a second factor is required at sign-in, and
 * whether a fresh one is asked before a terminal or a device's web UI is opened (Teleport's per-session
 * MFA). API tokens are never asked: they carry no person to ask.
 */
import { and, eq, gt, isNotNull, sql } from "drizzle-orm";
import type { Principal } from "../platform/access";
import type { Db } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { operatorSessions, secondFactorPolicy } from "./schema";
import { OPERATOR_ROLES, type OperatorRole } from "./service";

export interface RolePolicy {
  required: boolean;
  /** null: no fresh factor asked; 0: one per terminal or web UI opened; N: fresh for N minutes. */
  freshFactorMinutes: number | null;
}
export type FactorPolicy = Record<OperatorRole, RolePolicy>;

export const FRESH_FACTOR_LIMITS = { min: 0, max: 1440 };
/** With "every time" (0 minutes), a proof this recent is accepted once. */
const ONE_USE_SECONDS = 300;

export async function readFactorPolicy(db: Db): Promise<FactorPolicy> {
  const rows = await db.select().from(secondFactorPolicy);
  const policy = Object.fromEntries(
    OPERATOR_ROLES.map((role) => [role, { required: false, freshFactorMinutes: null }]),
  ) as FactorPolicy;
  for (const row of rows)
    policy[row.role] = { required: row.required, freshFactorMinutes: row.freshFactorMinutes };
  return policy;
}

export async function factorRequired(db: Db, role: OperatorRole): Promise<boolean> {
  return (await readFactorPolicy(db))[role].required;
}

/**
 * Saves the policy from the Settings form: `required_<role>` ticked or not, `fresh_<role>` empty (off)
 * or whole minutes. All or nothing: a bad number changes nothing.
 */
export async function saveFactorPolicy(
  db: Db,
  form: Record<string, unknown>,
  by: string,
): Promise<FactorPolicy> {
  const policy = {} as FactorPolicy;
  for (const role of OPERATOR_ROLES) {
    const raw = typeof form[`fresh_${role}`] === "string" ? (form[`fresh_${role}`] as string).trim() : "";
    let minutes: number | null = null;
    if (raw !== "") {
      if (!/^\d+$/.test(raw) || Number(raw) > FRESH_FACTOR_LIMITS.max) {
        throw badRequest(
          `The fresh-factor time of ${role}s must be a whole number of minutes from 0 to ${FRESH_FACTOR_LIMITS.max}, or empty`,
          { field: `fresh_${role}` },
        );
      }
      minutes = Number(raw);
    }
    policy[role] = {
      required: ["on", "true", "1"].includes(String(form[`required_${role}`] ?? "")),
      freshFactorMinutes: minutes,
    };
  }
  await db.transaction(async (tx) => {
    for (const role of OPERATOR_ROLES) {
      const values = { ...policy[role], updatedAt: new Date(), updatedBy: by };
      await tx
        .insert(secondFactorPolicy)
        .values({ role, ...values })
        .onConflictDoUpdate({ target: secondFactorPolicy.role, set: values });
    }
  });
  return policy;
}

/** Where the fresh-factor prompt lives, coming back to `next` once answered. */
export function freshFactorUrl(next: string): string {
  return `/account/verify?next=${encodeURIComponent(next)}`;
}

/**
 * Before a terminal or a device's web UI opens: throws 403 `fresh_factor_required` (details.verify_url)
 * when the principal's role asks for a fresh second factor and this session has not given one within
 * the time allowed. With 0 minutes a proof counts for one opening: it is used up here.
 */
export async function requireFreshFactor(
  db: Db,
  principal: Principal | undefined,
  next: string,
): Promise<void> {
  if (principal?.kind !== "session") return;
  const minutes = (await readFactorPolicy(db))[principal.role].freshFactorMinutes;
  if (minutes === null) return;
  const window = minutes === 0 ? ONE_USE_SECONDS : minutes * 60;
  const fresh = and(
    eq(operatorSessions.idHash, principal.sessionIdHash),
    isNotNull(operatorSessions.factorVerifiedAt),
    gt(operatorSessions.factorVerifiedAt, sql`now() - make_interval(secs => ${window})`),
  );
  const rows =
    minutes === 0
      ? await db
          .update(operatorSessions)
          .set({ factorVerifiedAt: null })
          .where(fresh)
          .returning({ id: operatorSessions.idHash })
      : await db.select({ id: operatorSessions.idHash }).from(operatorSessions).where(fresh);
  if (rows.length > 0) return;
  throw new AppError(
    403,
    "fresh_factor_required",
    "Confirm it is you with your second factor before reaching a device.",
    { verify_url: freshFactorUrl(next) },
  );
}
