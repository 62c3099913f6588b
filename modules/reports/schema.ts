import { sql } from "drizzle-orm";
import { jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { savedViews } from "../fleet/schema";
import type { ReportConfig } from "./model";

/** Custom reports: a name (unique regardless of case) and the definition (see model.ts ReportConfig). */
export const customReports = pgTable(
  "custom_reports",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    config: jsonb("config").$type<ReportConfig>().notNull(),
    /** The saved view of a view-scoped report (also in config.scope): a view in use cannot be deleted. */
    scopeViewId: uuid("scope_view_id").references(() => savedViews.id, { onDelete: "restrict" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [uniqueIndex("custom_reports_name_lower_idx").on(sql`lower(${table.name})`)],
);

/**
 * Saved view preferences (sort, filter row) per viewer and view: `scope` is `operator=<id>` for a
 * signed-in operator or `token=<id>` for an API token; `view_key` is `reports:index` or
 * `reports:show:<report id>`. Rows of deleted reports are deleted with the report.
 */
export const reportViewPreferences = pgTable(
  "report_view_preferences",
  {
    scope: text("scope").notNull(),
    viewKey: text("view_key").notNull(),
    preferences: jsonb("preferences").$type<Record<string, string>>().notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [primaryKey({ name: "report_view_preferences_pkey", columns: [table.scope, table.viewKey] })],
);
