import { sql } from "drizzle-orm";
import { index, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { devices } from "../devices/schema";

/**
 * Operators' `key=value` tags, one row a key per device (the labels a device's agent declares live on
 * the device row, `devices.labels`). `(key, value, device_id)` answers `tag:key=value` and `tag:key` as
 * an index range of device ids, and the suggestions of keys and values (docs/fleet.md, _Indexes_).
 */
export const deviceTags = pgTable(
  "device_tags",
  {
    deviceId: uuid("device_id")
      .notNull()
      .references(() => devices.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    value: text("value").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [
    primaryKey({ name: "device_tags_pkey", columns: [table.deviceId, table.key] }),
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
