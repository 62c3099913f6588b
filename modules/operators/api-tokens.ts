/** API tokens: created shown once (only their SHA-256 is stored), listed, revoked, resolved per request. */
import { and, desc, eq, isNull } from "drizzle-orm";
import { randomToken, sha256Hex } from "../platform/crypto";
import type { Db } from "../platform/database";
import { badRequest } from "../platform/errors";
import { apiTokens } from "./schema";
import { isOperatorRole, type OperatorRole } from "./service";

const TOKEN_PREFIX = "opt_";
export const TOKEN_NAME_MAX = 100;

export interface ApiTokenView {
  id: string;
  name: string;
  role: OperatorRole;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export async function createApiToken(
  db: Db,
  input: { name: string; role: OperatorRole; createdBy?: string },
): Promise<{ token: string; record: ApiTokenView }> {
  const name = input.name.trim();
  if (!name || name.length > TOKEN_NAME_MAX) {
    throw badRequest(`Give the token a name of 1 to ${TOKEN_NAME_MAX} characters`);
  }
  if (!isOperatorRole(input.role)) throw badRequest("The role must be admin, operator or viewer");
  const token = `${TOKEN_PREFIX}${randomToken(32)}`;
  const [record] = await db
    .insert(apiTokens)
    .values({
      name,
      role: input.role,
      tokenHash: sha256Hex(token),
      prefix: token.slice(0, 10),
      createdBy: input.createdBy,
    })
    .returning();
  return { token, record: record! };
}

/** Makes sure an admin token with exactly this secret exists (for CI); idempotent. */
export async function ensureBootstrapToken(db: Db, secret: string): Promise<void> {
  await db
    .insert(apiTokens)
    .values({ name: "bootstrap", role: "admin", tokenHash: sha256Hex(secret), prefix: secret.slice(0, 6) })
    .onConflictDoUpdate({ target: apiTokens.tokenHash, set: { revokedAt: null } });
}

export async function listApiTokens(db: Db): Promise<ApiTokenView[]> {
  return db.select().from(apiTokens).orderBy(desc(apiTokens.createdAt));
}

export async function revokeApiToken(db: Db, id: string): Promise<boolean> {
  const rows = await db
    .update(apiTokens)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiTokens.id, id), isNull(apiTokens.revokedAt)))
    .returning({ id: apiTokens.id });
  return rows.length > 0;
}

const TOKEN_TOUCH_MS = 60_000;

export async function resolveApiToken(
  db: Db,
  token: string,
): Promise<{ id: string; name: string; role: OperatorRole } | undefined> {
  const [row] = await db
    .select()
    .from(apiTokens)
    .where(and(eq(apiTokens.tokenHash, sha256Hex(token)), isNull(apiTokens.revokedAt)));
  if (!row) return undefined;
  if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > TOKEN_TOUCH_MS) {
    await db.update(apiTokens).set({ lastUsedAt: new Date() }).where(eq(apiTokens.id, row.id));
  }
  return { id: row.id, name: row.name, role: row.role };
}

/** Whether a token may still operate (not revoked, operator or admin): terminals opened with it check it. */
export async function apiTokenIsActive(db: Db, id: string): Promise<boolean> {
  const [row] = await db
    .select({ role: apiTokens.role })
    .from(apiTokens)
    .where(and(eq(apiTokens.id, id), isNull(apiTokens.revokedAt)));
  return row !== undefined && (row.role === "operator" || row.role === "admin");
}
