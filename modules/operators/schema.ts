import { sql } from "drizzle-orm";
import { index, integer, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

export const operatorRole = pgEnum("operator_role", ["admin", "operator", "viewer"]);

export const operators = pgTable("operators", {
  id: uuid("id").primaryKey().defaultRandom(),
  /** Stored lower-cased; unique. */
  email: text("email").notNull().unique(),
  passwordHash: text("password_hash").notNull(),
  role: operatorRole("role").notNull(),
  disabledAt: timestamp("disabled_at", { withTimezone: true }),
  lastLoginAt: timestamp("last_login_at", { withTimezone: true }),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

export const operatorSessions = pgTable(
  "operator_sessions",
  {
    /** SHA-256 of the cookie value: a leaked table does not leak sessions. */
    idHash: text("id_hash").primaryKey(),
    operatorId: uuid("operator_id")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp("last_seen_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    ipAddress: text("ip_address"),
    userAgent: text("user_agent"),
  },
  (table) => [index("operator_sessions_expires_at_idx").on(table.expiresAt)],
);

export const apiTokens = pgTable("api_tokens", {
  id: uuid("id").primaryKey().defaultRandom(),
  name: text("name").notNull(),
  role: operatorRole("role").notNull(),
  tokenHash: text("token_hash").notNull().unique(),
  /** First characters of the token, shown in lists so people can tell tokens apart. */
  prefix: text("prefix").notNull(),
  createdBy: uuid("created_by").references(() => operators.id, { onDelete: "set null" }),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
  revokedAt: timestamp("revoked_at", { withTimezone: true }),
});

/** Failed login counters shared by every web instance (rate limiting must not live in memory). */
export const loginThrottle = pgTable("login_throttle", {
  key: text("key").primaryKey(),
  failures: integer("failures").notNull().default(0),
  windowStartedAt: timestamp("window_started_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Hashes of the one-time setup codes printed at start while no operator exists. */
export const setupCodes = pgTable("setup_codes", {
  codeHash: text("code_hash").primaryKey(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
});
