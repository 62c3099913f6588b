/**
 * From a verified provider account to an Outpost operator: the role its claim maps to, the operator
 * linked to its (issuer, subject), or a new one on first sign-in.
 */
import { and, eq, sql } from "drizzle-orm";
import {
  changeOperatorRole,
  createExternalOperator,
  findOperator,
  markExternalSignIn,
  normaliseEmail,
  type OperatorRole,
  type OperatorView,
  roleAllows,
} from "../operators/service";
import type { Db } from "../platform/database";
import { AppError } from "../platform/errors";
import type { OidcConfig } from "../platform/sso-config";
import type { OidcClaims } from "./client";
import { oidcIdentities } from "./schema";

/** The claim's values as strings: providers send one string, a list, or nothing. */
export function claimValues(claims: Record<string, unknown>, name: string): string[] {
  const value = claims[name];
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === "string");
  return [];
}

/** The highest role any of the claim's values maps to, or undefined when none is mapped. */
export function mappedRole(oidc: Pick<OidcConfig, "roleClaim" | "roleMap">, claims: Record<string, unknown>) {
  let best: OperatorRole | undefined;
  for (const value of claimValues(claims, oidc.roleClaim)) {
    const role = Object.hasOwn(oidc.roleMap, value) ? oidc.roleMap[value] : undefined;
    if (role && (!best || roleAllows(role, best))) best = role;
  }
  return best;
}

/** The provider account linked to this operator, if any. */
export async function linkedIdentity(db: Db, operatorId: string, issuer: string) {
  const [row] = await db
    .select()
    .from(oidcIdentities)
    .where(and(eq(oidcIdentities.operatorId, operatorId), eq(oidcIdentities.issuer, issuer)));
  return row;
}

export interface SignedInIdentity {
  operator: OperatorView;
  created: boolean;
  /** Linked to an operator who was signed in when the sign-in began. */
  linked?: boolean;
  /** The role before this sign-in changed it to the mapped one. */
  previousRole?: OperatorRole;
}

function emailOf(claims: OidcClaims): string {
  const raw = typeof claims.email === "string" ? claims.email : "";
  if (!raw || claims.email_verified === false) {
    throw new AppError(
      403,
      "oidc_no_email",
      "Your provider account has no verified email address, which Outpost needs to name you.",
      { email: raw || null, email_verified: claims.email_verified ?? null },
    );
  }
  try {
    return normaliseEmail(raw);
  } catch {
    throw new AppError(403, "oidc_no_email", "Your provider account's email address is not valid.", {
      email: raw,
    });
  }
}

/**
 * The operator this provider account signs in as: the one linked to its (issuer, subject); with
 * `linkTo` (an operator signed in when the sign-in began), that operator, now linked; otherwise a new
 * one. Refused (AppError) when no value of the role claim is mapped, when the operator is disabled, when
 * a link already exists elsewhere, or when a new account's email belongs to an operator it is not linked
 * to: an email is not proof of being that person. The role follows the mapping at every sign-in, except
 * that the last enabled admin is never lowered.
 */
export async function signInIdentity(
  db: Db,
  oidc: Pick<OidcConfig, "roleClaim" | "roleMap">,
  claims: OidcClaims,
  linkTo?: string,
): Promise<SignedInIdentity> {
  const role = mappedRole(oidc, claims);
  if (!role) {
    const values = claimValues(claims, oidc.roleClaim);
    throw new AppError(
      403,
      "oidc_unmapped",
      values.length
        ? `None of your ${oidc.roleClaim} (${values.join(", ")}) gives access to Outpost. Ask an administrator to map one to a role.`
        : `Your provider account carries no "${oidc.roleClaim}" claim that gives access to Outpost. Ask an administrator.`,
      { claim: oidc.roleClaim, values },
    );
  }
  const key = and(eq(oidcIdentities.issuer, claims.iss), eq(oidcIdentities.subject, claims.sub));
  const [link] = await db.select().from(oidcIdentities).where(key);
  if (link && linkTo && link.operatorId !== linkTo) {
    throw new AppError(
      409,
      "oidc_already_linked",
      "This provider account is linked to another Outpost operator.",
      {
        operator: link.operatorId,
      },
    );
  }
  if (!link && !linkTo) return createLinked(db, claims, role);
  const operator = await findOperator(db, link?.operatorId ?? linkTo!);
  if (!operator || operator.disabled) {
    throw new AppError(
      403,
      "oidc_operator_disabled",
      "Your Outpost account is disabled. Ask an administrator.",
      {
        operator: operator?.id ?? null,
      },
    );
  }
  if (link) await db.update(oidcIdentities).set({ lastSignInAt: sql`now()` }).where(key);
  else await linkOperator(db, claims, operator.id);
  await markExternalSignIn(db, operator.id);
  return { ...(await followMapping(db, operator, role)), created: false, linked: !link };
}

async function linkOperator(db: Db, claims: OidcClaims, operatorId: string): Promise<void> {
  const inserted = await db
    .insert(oidcIdentities)
    .values({ issuer: claims.iss, subject: claims.sub, operatorId, lastSignInAt: sql`now()` })
    .onConflictDoNothing()
    .returning({ operatorId: oidcIdentities.operatorId });
  if (inserted.length === 0) {
    throw new AppError(
      409,
      "oidc_already_linked",
      "Your Outpost account is already linked to another account at this provider.",
      { operator: operatorId },
    );
  }
}

/** The operator with the mapped role (and the role it had), unless that would lower the last admin. */
async function followMapping(db: Db, operator: OperatorView, role: OperatorRole) {
  if (operator.role === role) return { operator };
  try {
    return { operator: await changeOperatorRole(db, operator.id, role), previousRole: operator.role };
  } catch (error) {
    if (error instanceof AppError && error.code === "last_admin") return { operator };
    throw error;
  }
}

async function createLinked(db: Db, claims: OidcClaims, role: OperatorRole): Promise<SignedInIdentity> {
  const email = emailOf(claims);
  // One transaction: a second tab finishing the same first sign-in cannot leave an unlinked operator.
  const operator = await db.transaction(async (tx) => {
    let created: OperatorView;
    try {
      created = await createExternalOperator(tx as unknown as Db, { email, role });
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "operator_exists") throw error;
      throw new AppError(
        409,
        "oidc_email_taken",
        `An Outpost operator with the email ${email} already exists and is not linked to this provider account. If it is yours, sign in to Outpost with its password first, then use single sign-on again to link the two.`,
        { email },
      );
    }
    await tx
      .insert(oidcIdentities)
      .values({ issuer: claims.iss, subject: claims.sub, operatorId: created.id, lastSignInAt: sql`now()` });
    return created;
  });
  await markExternalSignIn(db, operator.id);
  return { operator, created: true };
}
