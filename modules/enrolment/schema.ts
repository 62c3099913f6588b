import { sql } from "drizzle-orm";
import { boolean, index, integer, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

/**
 * Enrolment tokens (admin, Settings): a device registering with one follows its policy, approved at
 * once or pending. Only the SHA-256 of the token is stored; the token is shown once.
 */
export const enrolmentTokens = pgTable(
  "enrolment_tokens",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    /** The first characters, to recognise a token in the list. */
    prefix: text("prefix").notNull(),
    /** true: devices enrolled with it are approved at once; false: they wait for an operator. */
    approve: boolean("approve").notNull(),
    /** Only devices announcing this product may use it (null: any). */
    productName: text("product_name"),
    /** null: unlimited. */
    maxUses: integer("max_uses"),
    uses: integer("uses").notNull().default(0),
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
    createdBy: text("created_by").notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
  },
  (table) => [index("enrolment_tokens_created_idx").on(table.createdAt)],
);
