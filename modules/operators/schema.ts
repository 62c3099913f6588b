import { sql } from "drizzle-orm";
import { boolean, index, integer, jsonb, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

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

/**
 * `factor`: the password was right, the second factor is still asked; `enrol`: the password was right
 * and a second factor is required but the operator has none yet. Neither grants anything but that step.
 */
export const sessionStage = pgEnum("session_stage", ["factor", "enrol", "signed_in"]);

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
    stage: sessionStage("stage").notNull().default("signed_in"),
    /** When this session last proved a second factor (sign-in, enrolment or a fresh-factor prompt). */
    factorVerifiedAt: timestamp("factor_verified_at", { withTimezone: true }),
    /** The WebAuthn challenge this session's page was given, until used or expired. */
    challenge: text("challenge"),
    challengeExpiresAt: timestamp("challenge_expires_at", { withTimezone: true }),
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

export const factorKind = pgEnum("factor_kind", ["totp", "webauthn"]);

/** An operator's second factors: TOTP authenticators and WebAuthn credentials (passkeys, security keys). */
export const operatorFactors = pgTable(
  "operator_factors",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    operatorId: uuid("operator_id")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    kind: factorKind("kind").notNull(),
    name: text("name").notNull(),
    /** TOTP: the shared secret, AES-256-GCM sealed with a key derived from SECRET_KEY (base64). */
    totpSecret: text("totp_secret"),
    /** TOTP: the last time step accepted; a code of this step or an earlier one is refused (no replay). */
    totpLastStep: integer("totp_last_step"),
    /** WebAuthn: the credential id (base64url), its public key (base64url), signature counter, transports. */
    credentialId: text("credential_id").unique(),
    publicKey: text("public_key"),
    signCount: integer("sign_count"),
    transports: jsonb("transports").$type<string[]>(),
    /** Null while a TOTP enrolment waits for its first code; such a factor signs nobody in. */
    confirmedAt: timestamp("confirmed_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
  },
  (table) => [index("operator_factors_operator_idx").on(table.operatorId)],
);

/** One-time recovery codes, stored only as SHA-256; a used code keeps its row (usedAt) for the account page. */
export const recoveryCodes = pgTable(
  "recovery_codes",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    operatorId: uuid("operator_id")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    codeHash: text("code_hash").notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [index("recovery_codes_operator_idx").on(table.operatorId)],
);

/** Per role: is a second factor required at sign-in, and is a fresh one asked before reaching a device. */
export const secondFactorPolicy = pgTable("second_factor_policy", {
  role: operatorRole("role").primaryKey(),
  required: boolean("required").notNull().default(false),
  /** Null: no fresh factor asked; 0: one per terminal or web UI opened; N: a factor stays fresh N minutes. */
  freshFactorMinutes: integer("fresh_factor_minutes"),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  updatedBy: text("updated_by"),
});
