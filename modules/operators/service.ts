import { and, count, eq, gt, inArray, isNull, lt, sql } from "drizzle-orm";
import { randomToken, sha256Hex } from "../platform/crypto";
import type { Db } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import type { OperatorRole } from "./model";
import { loginThrottle, operatorSessions, operators, setupCodes } from "./schema";

export { isOperatorRole, OPERATOR_ROLES, type OperatorRole } from "./model";

const ROLE_RANK: Record<OperatorRole, number> = { viewer: 1, operator: 2, admin: 3 };

/** True when `role` may do what `required` may. */
export function roleAllows(role: OperatorRole, required: OperatorRole): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[required];
}

export interface OperatorView {
  id: string;
  email: string;
  role: OperatorRole;
}

const MIN_PASSWORD_LENGTH = 10;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const EMAIL_MAX = 254;

export function normaliseEmail(email: string): string {
  const value = email.trim().toLowerCase();
  if (!EMAIL_PATTERN.test(value) || value.length > EMAIL_MAX) throw badRequest("Enter a valid email address");
  return value;
}

function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw badRequest(`The password must be at least ${MIN_PASSWORD_LENGTH} characters long`);
  }
  if (password.length > 1024) throw badRequest("The password is too long");
}

async function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: "argon2id" });
}

export async function countOperators(db: Db): Promise<number> {
  const [row] = await db.select({ n: count() }).from(operators);
  return row?.n ?? 0;
}

export async function createOperator(
  db: Db,
  input: { email: string; password: string; role: OperatorRole },
): Promise<OperatorView> {
  const email = normaliseEmail(input.email);
  checkPassword(input.password);
  const passwordHash = await hashPassword(input.password);
  const [row] = await db
    .insert(operators)
    .values({ email, passwordHash, role: input.role })
    .onConflictDoNothing({ target: operators.email })
    .returning({ id: operators.id, email: operators.email, role: operators.role });
  if (!row) throw new AppError(409, "operator_exists", `An operator with email ${email} already exists`);
  return row;
}

// ---------------------------------------------------------------- first run

/**
 * A fresh one-time setup code while no operator exists; undefined once one does. It replaces every
 * code issued before (earlier starts, other web processes): only the code printed last is valid.
 */
export async function issueSetupCode(db: Db): Promise<string | undefined> {
  if ((await countOperators(db)) > 0) return undefined;
  const code = randomToken(9);
  await db.transaction(async (tx) => {
    await tx.delete(setupCodes);
    await tx.insert(setupCodes).values({ codeHash: sha256Hex(code) });
  });
  return code;
}

/** Creates the first admin; refused once any operator exists or with a wrong setup code. */
export async function completeSetup(
  db: Db,
  input: { code: string; email: string; password: string },
): Promise<OperatorView> {
  const email = normaliseEmail(input.email);
  checkPassword(input.password);
  const passwordHash = await hashPassword(input.password);
  return db.transaction(async (tx) => {
    // Serialise concurrent setups so exactly one first admin can exist.
    await tx.execute(sql`lock table ${operators} in exclusive mode`);
    if ((await countOperators(tx as unknown as Db)) > 0) {
      throw new AppError(409, "setup_complete", "Setup is already complete: sign in instead");
    }
    const [code] = await tx
      .select()
      .from(setupCodes)
      .where(eq(setupCodes.codeHash, sha256Hex(input.code.trim())));
    if (!code) throw new AppError(403, "invalid_setup_code", "The setup code is not valid");
    const [row] = await tx
      .insert(operators)
      .values({ email, passwordHash, role: "admin" })
      .returning({ id: operators.id, email: operators.email, role: operators.role });
    await tx.delete(setupCodes);
    return row!;
  });
}

/** Ensures the admin named by OUTPOST_BOOTSTRAP_ADMIN_* exists (created once, never overwritten). */
export async function ensureBootstrapAdmin(db: Db, email: string, password: string): Promise<boolean> {
  const normalised = normaliseEmail(email);
  const [existing] = await db
    .select({ id: operators.id })
    .from(operators)
    .where(eq(operators.email, normalised));
  if (existing) return false;
  await createOperator(db, { email: normalised, password, role: "admin" });
  await db.delete(setupCodes);
  return true;
}

// ---------------------------------------------------------------- login

/**
 * Failed sign-ins allowed per window: per email from one address (the usual guard), per address over
 * all emails, and per email over all addresses (a distributed guess). Keying the first by email and
 * address means a stranger elsewhere cannot lock an operator out of their own address with five
 * wrong passwords; `./outpost admin unlock` clears an email's counters at once.
 */
export const LOGIN_LIMITS = { perEmailAndAddress: 5, perAddress: 20, perEmail: 50, windowMinutes: 15 };

function loginLimit(key: string): number {
  if (key.startsWith("email-ip:")) return LOGIN_LIMITS.perEmailAndAddress;
  if (key.startsWith("email:")) return LOGIN_LIMITS.perEmail;
  return LOGIN_LIMITS.perAddress;
}

// Verifying against a real hash when the email is unknown keeps response times alike.
const DUMMY_HASH = await hashPassword(randomToken(16));

async function throttleState(db: Db, keys: string[]): Promise<number | undefined> {
  const rows = await db
    .select()
    .from(loginThrottle)
    .where(
      and(
        inArray(loginThrottle.key, keys),
        gt(loginThrottle.windowStartedAt, sql`now() - make_interval(mins => ${LOGIN_LIMITS.windowMinutes})`),
      ),
    );
  let retryAfter: number | undefined;
  for (const row of rows) {
    const limit = loginLimit(row.key);
    if (row.failures >= limit) {
      const resetsAt = row.windowStartedAt.getTime() + LOGIN_LIMITS.windowMinutes * 60_000;
      const seconds = Math.max(1, Math.ceil((resetsAt - Date.now()) / 1000));
      retryAfter = Math.max(retryAfter ?? 0, seconds);
    }
  }
  return retryAfter;
}

async function recordFailure(db: Db, keys: string[]): Promise<void> {
  for (const key of keys) {
    await db
      .insert(loginThrottle)
      .values({ key, failures: 1 })
      .onConflictDoUpdate({
        target: loginThrottle.key,
        set: {
          failures: sql`case when ${loginThrottle.windowStartedAt} > now() - make_interval(mins => ${LOGIN_LIMITS.windowMinutes}) then ${loginThrottle.failures} + 1 else 1 end`,
          windowStartedAt: sql`case when ${loginThrottle.windowStartedAt} > now() - make_interval(mins => ${LOGIN_LIMITS.windowMinutes}) then ${loginThrottle.windowStartedAt} else now() end`,
        },
      });
  }
}

function throttleKeys(email: string, address: string): string[] {
  const normalised = email.trim().toLowerCase();
  return [`email-ip:${normalised}|${address}`, `ip:${address}`, `email:${normalised}`];
}

/**
 * Throws 429 while failed sign-ins of this email from this address (or either alone) are over their
 * limit. Password and second-factor failures count alike: a known password gives no extra guesses.
 */
export async function checkSignInThrottle(db: Db, email: string, address: string): Promise<void> {
  const retryAfter = await throttleState(db, throttleKeys(email, address));
  if (retryAfter !== undefined) {
    throw new AppError(429, "rate_limited", "Too many failed sign-in attempts. Try again later.", undefined, {
      "Retry-After": String(retryAfter),
    });
  }
}

export async function recordSignInFailure(db: Db, email: string, address: string): Promise<void> {
  await recordFailure(db, throttleKeys(email, address));
}

/** After a whole sign-in succeeded: this email's counter for this address starts over. */
export async function clearSignInFailures(db: Db, email: string, address: string): Promise<void> {
  await db.delete(loginThrottle).where(eq(loginThrottle.key, throttleKeys(email, address)[0]!));
}

/**
 * Checks email and password. The caller clears the failure counter once the whole sign-in (second
 * factor included) succeeded: clearing it here would give whoever knows the password fresh factor guesses.
 */
export async function authenticate(
  db: Db,
  input: { email: string; password: string; address: string },
): Promise<OperatorView> {
  const email = input.email.trim().toLowerCase();
  await checkSignInThrottle(db, email, input.address);
  const [row] = await db.select().from(operators).where(eq(operators.email, email));
  const valid = await Bun.password.verify(input.password, row?.passwordHash ?? DUMMY_HASH);
  if (!row || !valid || row.disabledAt) {
    await recordSignInFailure(db, email, input.address);
    throw new AppError(401, "invalid_credentials", "Wrong email or password");
  }
  return { id: row.id, email: row.email, role: row.role };
}

/** Records a completed sign-in (password and, when asked, second factor). */
export async function markSignedIn(db: Db, operator: OperatorView, address: string): Promise<void> {
  await clearSignInFailures(db, operator.email, address);
  await db.update(operators).set({ lastLoginAt: new Date() }).where(eq(operators.id, operator.id));
}

/** Clears an email's failed sign-in counters (every address); returns how many were cleared. */
export async function unlockSignIn(db: Db, email: string): Promise<number> {
  const normalised = email.trim().toLowerCase();
  const deleted = await db
    .delete(loginThrottle)
    .where(
      sql`${loginThrottle.key} = ${`email:${normalised}`} or starts_with(${loginThrottle.key}, ${`email-ip:${normalised}|`})`,
    );
  return deleted.count;
}

// ---------------------------------------------------------------- sessions

export interface SessionView {
  idHash: string;
  operator: OperatorView;
}

const SESSION_TOUCH_MS = 5 * 60_000;

export type SessionStage = "factor" | "enrol" | "signed_in";

/** A new session (signed in unless `stage` says it waits for a second factor); returns the cookie value. */
export async function createSession(
  db: Db,
  input: {
    operatorId: string;
    ttlHours: number;
    address?: string;
    userAgent?: string;
    stage?: SessionStage;
    factorVerifiedAt?: Date;
  },
): Promise<string> {
  const token = randomToken(32);
  await db.insert(operatorSessions).values({
    idHash: sha256Hex(token),
    operatorId: input.operatorId,
    expiresAt: new Date(Date.now() + input.ttlHours * 3_600_000),
    ipAddress: input.address,
    userAgent: input.userAgent?.slice(0, 300),
    stage: input.stage ?? "signed_in",
    factorVerifiedAt: input.factorVerifiedAt,
  });
  return token;
}

/** The live session behind a cookie value, sliding its expiry on activity. */
export async function resolveSession(
  db: Db,
  token: string,
  ttlHours: number,
): Promise<SessionView | undefined> {
  const idHash = sha256Hex(token);
  const [row] = await db
    .select({
      lastSeenAt: operatorSessions.lastSeenAt,
      id: operators.id,
      email: operators.email,
      role: operators.role,
    })
    .from(operatorSessions)
    .innerJoin(operators, eq(operators.id, operatorSessions.operatorId))
    .where(
      and(
        eq(operatorSessions.idHash, idHash),
        eq(operatorSessions.stage, "signed_in"),
        gt(operatorSessions.expiresAt, sql`now()`),
        isNull(operators.disabledAt),
      ),
    );
  if (!row) return undefined;
  if (Date.now() - row.lastSeenAt.getTime() > SESSION_TOUCH_MS) {
    await db
      .update(operatorSessions)
      .set({ lastSeenAt: new Date(), expiresAt: new Date(Date.now() + ttlHours * 3_600_000) })
      .where(eq(operatorSessions.idHash, idHash));
  }
  return { idHash, operator: { id: row.id, email: row.email, role: row.role } };
}

export async function deleteSession(db: Db, idHash: string): Promise<void> {
  await db.delete(operatorSessions).where(eq(operatorSessions.idHash, idHash));
}

export * from "./api-tokens";

// ---------------------------------------------------------------- operator management

export async function listOperators(db: Db) {
  return db
    .select({
      id: operators.id,
      email: operators.email,
      role: operators.role,
      disabledAt: operators.disabledAt,
      lastLoginAt: operators.lastLoginAt,
      createdAt: operators.createdAt,
    })
    .from(operators)
    .orderBy(operators.email);
}

export async function operatorById(db: Db, id: string): Promise<OperatorView> {
  const [row] = await db
    .select({ id: operators.id, email: operators.email, role: operators.role })
    .from(operators)
    .where(eq(operators.id, id));
  if (!row) throw new AppError(404, "operator_not_found", "No such operator");
  return row;
}

/** Whether the operator may still operate (exists, not disabled, not lowered to viewer): running terminals check it. */
export async function operatorIsActive(db: Db, id: string): Promise<boolean> {
  const [row] = await db
    .select({ role: operators.role })
    .from(operators)
    .where(and(eq(operators.id, id), isNull(operators.disabledAt)));
  return row !== undefined && roleAllows(row.role, "operator");
}

/** Deletes expired sessions and login throttles older than a day; returns how many of each went. */
export async function pruneExpiredSessions(db: Db): Promise<{ sessions: number; throttles: number }> {
  const sessions = await db.delete(operatorSessions).where(lt(operatorSessions.expiresAt, sql`now()`));
  const throttles = await db
    .delete(loginThrottle)
    .where(lt(loginThrottle.windowStartedAt, sql`now() - interval '1 day'`));
  return { sessions: sessions.count, throttles: throttles.count };
}
export { createExternalOperator, findOperator, markExternalSignIn } from "./external";
export { factorCounts, resetFactors, resetFactorsByEmail } from "./factors";
export { changeOperatorRole, inviteOperator, setOperatorDisabled } from "./management";
export {
  type FactorPolicy,
  FRESH_FACTOR_LIMITS,
  readFactorPolicy,
  requireFreshFactor,
  saveFactorPolicy,
} from "./policy";
