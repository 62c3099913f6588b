import { sql } from "drizzle-orm";
import { index, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { devices } from "../devices/schema";

/**
 * Every `key=value` tag of every device, from both sources: `operator` (the console, the API) and
 * `agent` (the labels its agent declares, kept in step with `devices.labels` at each registration by
 * syncDeclaredLabels). One row a key per source and device. `(key, value, device_id)` answers
 * `tag:key=value` and `tag:key` over both as one index range of device ids (with the planner's own
 * estimate of how many), and the suggestions of keys and values (docs/fleet.md, _Indexes_).
 */
export const deviceTags = pgTable(
  "device_tags",
  {
    deviceId: uuid("device_id")
      .notNull()
      .references(() => devices.id, { onDelete: "cascade" }),
    source: text("source").$type<"operator" | "agent">().notNull().default("operator"),
    key: text("key").notNull(),
    value: text("value").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [
    primaryKey({ name: "device_tags_pkey", columns: [table.deviceId, table.source, table.key] }),
    index("device_tags_key_value_idx").on(table.key, table.value, table.deviceId),
  ],
);

/** Saved views: a named query shared by the team (a dynamic group: whoever matches now). */
export const savedViews = pgTable(
  "saved_views",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    query: text("query").notNull(),
    createdBy: text("created_by").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [uniqueIndex("saved_views_name_lower_idx").on(sql`lower(${table.name})`)],
);
