/**
 * Operator administration for the Settings page: create (with a one-time initial password),
 * change role, disable and enable. The last enabled admin can be neither demoted nor disabled.
 */
import { and, eq, isNull, ne, sql } from "drizzle-orm";
import { randomToken } from "../platform/crypto";
import type { Db } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { operatorSessions, operators } from "./schema";
import { createOperator, isOperatorRole, type OperatorRole, type OperatorView } from "./service";

/** Creates an operator with a generated password, to hand over once (they sign in with it). */
export async function inviteOperator(
  db: Db,
  input: { email: string; role: string },
): Promise<{ operator: OperatorView; password: string }> {
  if (!isOperatorRole(input.role)) throw badRequest("Choose a role: admin, operator or viewer");
  const password = randomToken(15);
  const operator = await createOperator(db, { email: input.email, password, role: input.role });
  return { operator, password };
}

async function otherEnabledAdmins(tx: Db, id: string): Promise<number> {
  const rows = await tx
    .select({ id: operators.id })
    .from(operators)
    .where(and(eq(operators.role, "admin"), isNull(operators.disabledAt), ne(operators.id, id)));
  return rows.length;
}

/** Changes an operator's role (answering the role it had too); refuses to demote the last enabled admin. */
export async function changeOperatorRole(
  db: Db,
  id: string,
  role: string,
): Promise<OperatorView & { previousRole: OperatorRole }> {
  if (!isOperatorRole(role)) throw badRequest("Choose a role: admin, operator or viewer");
  return db.transaction(async (tx) => {
    // One admin change at a time, so two admins cannot demote each other at once.
    await tx.execute(sql`select pg_advisory_xact_lock(7401003)`);
    const [current] = await tx.select().from(operators).where(eq(operators.id, id));
    if (!current) throw new AppError(404, "operator_not_found", "No such operator");
    if (
      current.role === "admin" &&
      role !== "admin" &&
      (await otherEnabledAdmins(tx as unknown as Db, id)) === 0
    ) {
      throw new AppError(409, "last_admin", "Keep at least one enabled administrator.");
    }
    const [row] = await tx
      .update(operators)
      .set({ role: role as OperatorRole })
      .where(eq(operators.id, id))
      .returning({ id: operators.id, email: operators.email, role: operators.role });
    return { ...row!, previousRole: current.role };
  });
}

/** Disables (signs out everywhere) or re-enables an operator. */
export async function setOperatorDisabled(db: Db, id: string, disabled: boolean): Promise<OperatorView> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(7401003)`);
    const [current] = await tx.select().from(operators).where(eq(operators.id, id));
    if (!current) throw new AppError(404, "operator_not_found", "No such operator");
    if (
      disabled &&
      current.role === "admin" &&
      !current.disabledAt &&
      (await otherEnabledAdmins(tx as unknown as Db, id)) === 0
    ) {
      throw new AppError(409, "last_admin", "Keep at least one enabled administrator.");
    }
    const [row] = await tx
      .update(operators)
      .set({ disabledAt: disabled ? new Date() : null })
      .where(eq(operators.id, id))
      .returning({ id: operators.id, email: operators.email, role: operators.role });
    if (disabled) await tx.delete(operatorSessions).where(eq(operatorSessions.operatorId, id));
    return row!;
  });
}
