import { sql } from "drizzle-orm";
import { jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Operator-edited settings, one row per key (`online_window_seconds`, `notifications`, ...).
 * A missing row means "use the default from the environment" (modules/settings/store.ts).
 */
export const systemSettings = pgTable("system_settings", {
  key: text("key").primaryKey(),
  value: jsonb("value").$type<unknown>().notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().default(sql`now()`),
  /** Operator email or token name that saved it last. */
  updatedBy: text("updated_by"),
});
