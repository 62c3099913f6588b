/**
 * Operators whose identity lives elsewhere (single sign-on, modules/oidc): created without a password
 * anyone knows, looked up by id at each sign-in, and marked signed in.
 */
import { eq } from "drizzle-orm";
import { randomToken } from "../platform/crypto";
import type { Db } from "../platform/database";
import { operators } from "./schema";
import { createOperator, type OperatorRole, type OperatorView } from "./service";

/**
 * A new operator for a person another system vouches for. The password column holds the hash of a
 * random secret that is thrown away, so a password never signs them in (their provider does).
 * Throws 409 `operator_exists` when the email is taken.
 */
export async function createExternalOperator(
  db: Db,
  input: { email: string; role: OperatorRole },
): Promise<OperatorView> {
  return createOperator(db, { email: input.email, role: input.role, password: randomToken(32) });
}

/** The operator behind an external identity, with whether an admin disabled them. */
export async function findOperator(
  db: Db,
  id: string,
): Promise<(OperatorView & { disabled: boolean }) | undefined> {
  const [row] = await db
    .select({
      id: operators.id,
      email: operators.email,
      role: operators.role,
      disabledAt: operators.disabledAt,
    })
    .from(operators)
    .where(eq(operators.id, id));
  return row && { id: row.id, email: row.email, role: row.role, disabled: row.disabledAt !== null };
}

/** Records a sign-in that did not go through `authenticate` (which records its own). */
export async function markExternalSignIn(db: Db, id: string): Promise<void> {
  await db.update(operators).set({ lastLoginAt: new Date() }).where(eq(operators.id, id));
}
