// Enrolment tokens at the service: the limits of each input at their edges, what is stored (a hash and a
// recognisable prefix, never the secret), listing order, revocation, and the claim's checks at the
// exact moment a token expires or runs out. tokens.test.ts covers the same over HTTP with a real app.
import { describe, expect, test } from "bun:test";
import {
  claimEnrolment,
  createEnrolmentToken,
  ENROLMENT_NAME_MAX,
  listEnrolmentTokens,
  newEnrolmentSecret,
  revokeEnrolmentToken,
} from "../../modules/enrolment/service";
import { sha256Hex } from "../../modules/platform/crypto";
import { AppError } from "../../modules/platform/errors";
import { createTestDatabase } from "../helpers/database";

const database = await createTestDatabase();
const { sql } = database;

const create = (input: Partial<Parameters<typeof createEnrolmentToken>[1]> = {}) =>
  createEnrolmentToken(sql, { name: "line 1", approve: false, createdBy: "admin@test", ...input });

/** The error a call throws: its status, code and field. */
async function refusal(call: Promise<unknown>): Promise<[number, string, unknown]> {
  try {
    await call;
  } catch (error) {
    if (error instanceof AppError)
      return [error.status, error.code, (error.details as { field?: string })?.field];
    throw error;
  }
  throw new Error("expected a refusal");
}

/** Claims `token` for `product` in a transaction, counting the use when `use` is set. */
async function claim(token: string, product: string | null = null, use = false) {
  return sql.begin(async (tx) => {
    const policy = await claimEnrolment(tx as never, token, product);
    if (use) await policy.use();
    return policy.approve;
  });
}

const row = async (id: string) =>
  (await sql`select * from enrolment_tokens where id = ${id}::uuid`)[0] as Record<string, unknown>;

describe("creating a token", () => {
  test("the secret is shown once: stored as its SHA-256 with a 10-character recognisable prefix", async () => {
    const { token, record } = await create({ name: "  Berlin line  ", approve: true, productName: " gw " });
    expect(token).toMatch(/^oen_[A-Za-z0-9_-]{20,}$/);
    expect(record.prefix).toBe(token.slice(0, 10));
    expect(record.name).toBe("Berlin line");
    expect(record.productName).toBe("gw");
    expect(record.approve).toBe(true);
    expect([record.uses, record.maxUses, record.expiresAt, record.revokedAt, record.lastUsedAt]).toEqual([
      0,
      null,
      null,
      null,
      null,
    ]);
    expect(record.createdBy).toBe("admin@test");
    const stored = await row(record.id);
    expect(stored.token_hash).toBe(sha256Hex(token));
    expect(JSON.stringify(stored)).not.toContain(token);
  });

  test("each secret is new", () => {
    expect(new Set(Array.from({ length: 50 }, newEnrolmentSecret)).size).toBe(50);
  });

  test("name: blank or over the limit refused; exactly the limit accepted", async () => {
    expect(await refusal(create({ name: "   " }))).toEqual([400, "invalid_request", "name"]);
    expect(await refusal(create({ name: "x".repeat(ENROLMENT_NAME_MAX + 1) }))).toEqual([
      400,
      "invalid_request",
      "name",
    ]);
    expect((await create({ name: "x".repeat(ENROLMENT_NAME_MAX) })).record.name.length).toBe(
      ENROLMENT_NAME_MAX,
    );
  });

  test("max uses: 1 and 1,000,000 accepted; 0, 1,000,001 and fractions refused; empty is unlimited", async () => {
    for (const bad of [0, -1, 1_000_001, 1.5])
      expect(await refusal(create({ maxUses: bad }))).toEqual([400, "invalid_request", "max_uses"]);
    expect((await create({ maxUses: 1 })).record.maxUses).toBe(1);
    expect((await create({ maxUses: 1_000_000 })).record.maxUses).toBe(1_000_000);
    expect((await create({ maxUses: null })).record.maxUses).toBeNull();
  });

  test("expiry: 1 and 3650 days accepted (that many days from now); 0, 3651 and fractions refused", async () => {
    for (const bad of [0, 3651, 2.5])
      expect(await refusal(create({ expiresInDays: bad }))).toEqual([400, "invalid_request", "expires_in_days"]);
    const day = 86_400_000;
    const one = (await create({ expiresInDays: 1 })).record.expiresAt!.getTime();
    expect(Math.abs(one - (Date.now() + day))).toBeLessThan(60_000);
    const most = (await create({ expiresInDays: 3650 })).record.expiresAt!.getTime();
    expect(Math.abs(most - (Date.now() + 3650 * day))).toBeLessThan(2 * 3_600_000); // DST-free: UTC days
  });

  test("product: 128 characters accepted, 129 refused, blank means any product", async () => {
    expect(await refusal(create({ productName: "p".repeat(129) }))).toEqual([
      400,
      "invalid_request",
      "product_name",
    ]);
    expect((await create({ productName: "p".repeat(128) })).record.productName).toBe("p".repeat(128));
    expect((await create({ productName: "  " })).record.productName).toBeNull();
  });
});

describe("listing and revoking", () => {
  test("active tokens first, newest first within each; revoking twice or an unknown id says false", async () => {
    const older = await create({ name: "older" });
    const revoked = await create({ name: "revoked" });
    const newer = await create({ name: "newer" });
    await sql`update enrolment_tokens set created_at = now() - interval '1 hour' where id = ${older.record.id}::uuid`;
    expect(await revokeEnrolmentToken(sql, revoked.record.id)).toBe(true);
    expect(await revokeEnrolmentToken(sql, revoked.record.id)).toBe(false);
    expect(await revokeEnrolmentToken(sql, crypto.randomUUID())).toBe(false);
    expect(await revokeEnrolmentToken(sql, "not-a-uuid")).toBe(false);
    const ids = (await listEnrolmentTokens(sql)).map((t) => t.id);
    const position = (id: string) => ids.indexOf(id);
    expect(position(newer.record.id)).toBeLessThan(position(older.record.id));
    expect(position(older.record.id)).toBeLessThan(position(revoked.record.id));
    expect(ids[ids.length - 1]).toBe(revoked.record.id);
    const listed = (await listEnrolmentTokens(sql)).find((t) => t.id === revoked.record.id)!;
    expect(listed.revokedAt).toBeInstanceOf(Date);
  });
});

describe("claiming a token in a registration", () => {
  test("returns its policy; use() counts one use and stamps last use; a claim without use counts none", async () => {
    const approving = await create({ approve: true });
    expect(await claim(approving.token)).toBe(true);
    expect(Number((await row(approving.record.id)).uses)).toBe(0);
    expect(await claim(approving.token, null, true)).toBe(true);
    const after = await row(approving.record.id);
    expect(Number(after.uses)).toBe(1);
    expect(after.last_used_at).not.toBeNull();
    const pending = await create({ approve: false });
    expect(await claim(pending.token)).toBe(false);
  });

  test("unknown and revoked: 401 enrolment_token_invalid", async () => {
    expect(await refusal(claim("oen_unknown"))).toEqual([401, "enrolment_token_invalid", "enrolment_token"]);
    const { token, record } = await create();
    await revokeEnrolmentToken(sql, record.id);
    expect(await refusal(claim(token))).toEqual([401, "enrolment_token_invalid", "enrolment_token"]);
  });

  test("expiry is exact: a second before it the token works, at or after it is refused", async () => {
    const { token, record } = await create({ expiresInDays: 1 });
    await sql`update enrolment_tokens set expires_at = now() + interval '5 seconds' where id = ${record.id}::uuid`;
    expect(await claim(token)).toBe(false);
    await sql`update enrolment_tokens set expires_at = now() - interval '1 millisecond' where id = ${record.id}::uuid`;
    expect(await refusal(claim(token))).toEqual([403, "enrolment_token_expired", "enrolment_token"]);
  });

  test("max uses is exact: the last use is allowed, one more is refused", async () => {
    const { token } = await create({ maxUses: 2 });
    await claim(token, null, true);
    await claim(token, null, true);
    expect(await refusal(claim(token))).toEqual([403, "enrolment_token_used_up", "enrolment_token"]);
    const unlimited = await create({ maxUses: null });
    for (let i = 0; i < 3; i++) await claim(unlimited.token, null, true);
    expect(await claim(unlimited.token)).toBe(false);
  });

  test("a product-scoped token enrols only that product (exactly, not a device without one)", async () => {
    const { token } = await create({ productName: "gateway" });
    expect(await claim(token, "gateway")).toBe(false);
    expect(await refusal(claim(token, "Gateway"))).toEqual([
      403,
      "enrolment_token_wrong_product",
      "enrolment_token",
    ]);
    expect(await refusal(claim(token, null))).toEqual([
      403,
      "enrolment_token_wrong_product",
      "enrolment_token",
    ]);
    const any = await create({ productName: null });
    expect(await claim(any.token, "whatever")).toBe(false);
  });
});
