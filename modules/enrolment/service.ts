import { randomToken, sha256Hex } from "../platform/crypto";
import type { Sql } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";
import { isUuid } from "../platform/json-body";

export const ENROLMENT_NAME_MAX = 100;
/** Tokens start with this, so a leaked one is recognisable in logs and secret scanners. */
const PREFIX = "oen_";

export interface EnrolmentToken {
  id: string;
  name: string;
  prefix: string;
  approve: boolean;
  productName: string | null;
  maxUses: number | null;
  uses: number;
  expiresAt: Date | null;
  createdAt: Date;
  createdBy: string;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

type Row = {
  id: string;
  name: string;
  prefix: string;
  approve: boolean;
  product_name: string | null;
  max_uses: number | null;
  uses: number;
  expires_at: Date | null;
  created_at: Date;
  created_by: string;
  revoked_at: Date | null;
  last_used_at: Date | null;
};

function toToken(row: Row): EnrolmentToken {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    approve: row.approve,
    productName: row.product_name,
    maxUses: row.max_uses,
    uses: row.uses,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    createdBy: row.created_by,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
  };
}

/** A new enrolment token's secret (shown once; only its SHA-256 is stored). */
export function newEnrolmentSecret(): string {
  return `${PREFIX}${randomToken(24)}`;
}

export interface NewEnrolmentToken {
  name: string;
  approve: boolean;
  productName?: string | null;
  maxUses?: number | null;
  expiresInDays?: number | null;
  createdBy: string;
}

/** Creates a token; the secret is returned once and never stored. 400 naming the field on bad input. */
export async function createEnrolmentToken(
  sql: Sql,
  input: NewEnrolmentToken,
): Promise<{ token: string; record: EnrolmentToken }> {
  const name = input.name.trim();
  if (name === "" || name.length > ENROLMENT_NAME_MAX)
    throw badRequest(`Name it (at most ${ENROLMENT_NAME_MAX} characters)`, { field: "name" });
  const maxUses = input.maxUses ?? null;
  if (maxUses !== null && (!Number.isInteger(maxUses) || maxUses < 1 || maxUses > 1_000_000))
    throw badRequest("Max uses must be a whole number from 1 to 1,000,000 (or empty: unlimited)", {
      field: "max_uses",
    });
  const days = input.expiresInDays ?? null;
  if (days !== null && (!Number.isInteger(days) || days < 1 || days > 3650))
    throw badRequest("Expiry must be a whole number of days from 1 to 3650 (or empty: never)", {
      field: "expires_in_days",
    });
  const product = input.productName?.trim() || null;
  if (product !== null && product.length > 128)
    throw badRequest("The product name is at most 128 characters", { field: "product_name" });
  const token = newEnrolmentSecret();
  const [row] = await sql<Row[]>`
    insert into enrolment_tokens (name, token_hash, prefix, approve, product_name, max_uses, expires_at, created_by)
    values (${name}, ${sha256Hex(token)}, ${token.slice(0, PREFIX.length + 6)}, ${input.approve}, ${product},
      ${maxUses}, ${days === null ? null : sql`now() + make_interval(days => ${days})`}, ${input.createdBy})
    returning *`;
  return { token, record: toToken(row!) };
}

export async function listEnrolmentTokens(sql: Sql): Promise<EnrolmentToken[]> {
  const rows = await sql<
    Row[]
  >`select * from enrolment_tokens order by revoked_at is not null, created_at desc limit 500`;
  return rows.map(toToken);
}

/** Revokes a token (false when it does not exist or was revoked already). Devices it enrolled stay. */
export async function revokeEnrolmentToken(sql: Sql, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  const rows =
    await sql`update enrolment_tokens set revoked_at = now() where id = ${id}::uuid and revoked_at is null`;
  return rows.count > 0;
}

const FIELD = { field: "enrolment_token" };

/**
 * Inside the registration's transaction: locks the token and checks it may enrol a device of
 * `productName` now. Returns its policy and a `use()` to count the enrolment (only a registration that
 * creates a device uses it up). Refusals change nothing.
 */
export async function claimEnrolment(
  tx: Sql,
  token: string,
  productName: string | null,
): Promise<{ approve: boolean; use(): Promise<void> }> {
  const [row] = await tx<
    Row[]
  >`select * from enrolment_tokens where token_hash = ${sha256Hex(token)} for update`;
  if (!row || row.revoked_at !== null)
    throw new AppError(
      401,
      "enrolment_token_invalid",
      "The enrolment token is not valid (unknown or revoked)",
      FIELD,
    );
  if (row.expires_at !== null && row.expires_at.getTime() <= Date.now())
    throw new AppError(403, "enrolment_token_expired", "The enrolment token has expired", FIELD);
  if (row.max_uses !== null && row.uses >= row.max_uses)
    throw new AppError(
      403,
      "enrolment_token_used_up",
      "The enrolment token has enrolled as many devices as it may",
      FIELD,
    );
  if (row.product_name !== null && row.product_name !== productName)
    throw new AppError(
      403,
      "enrolment_token_wrong_product",
      `The enrolment token is for devices of product "${row.product_name}" only`,
      FIELD,
    );
  return {
    approve: row.approve,
    async use() {
      await tx`update enrolment_tokens set uses = uses + 1, last_used_at = now() where id = ${row.id}::uuid`;
    },
  };
}

export { type InstallAdvice, installAdvice, installLine } from "./downloads";
