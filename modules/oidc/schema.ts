import { index, pgTable, primaryKey, text, timestamp, unique, uuid } from "drizzle-orm/pg-core";
import { operators } from "../operators/schema";

/**
 * Which provider account is which operator: the pair (issuer, subject) the provider promises never to
 * reassign. Emails are not identities (docs/security.md, _Single sign-on_).
 */
export const oidcIdentities = pgTable(
  "oidc_identities",
  {
    issuer: text("issuer").notNull(),
    subject: text("subject").notNull(),
    operatorId: uuid("operator_id")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastSignInAt: timestamp("last_sign_in_at", { withTimezone: true }),
  },
  (table) => [
    primaryKey({ columns: [table.issuer, table.subject] }),
    unique("oidc_identities_operator_issuer").on(table.operatorId, table.issuer),
  ],
);

/**
 * Sign-ins under way: what the callback must see again (state, nonce) and the PKCE verifier, keyed by
 * the SHA-256 of the random value in the browser's flow cookie, so the callback is bound to the browser
 * that started it. Single use; rows past `expires_at` are deleted when the next sign-in starts.
 */
export const oidcSignIns = pgTable(
  "oidc_sign_ins",
  {
    flowHash: text("flow_hash").primaryKey(),
    state: text("state").notNull(),
    nonce: text("nonce").notNull(),
    codeVerifier: text("code_verifier").notNull(),
    next: text("next").notNull(),
    /** The signed-in operator who asked to link this provider account (POST /auth/oidc/link). */
    linkOperatorId: uuid("link_operator_id").references(() => operators.id, { onDelete: "cascade" }),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (table) => [index("oidc_sign_ins_expires_at_idx").on(table.expiresAt)],
);
