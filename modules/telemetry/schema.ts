import { index, json, pgTable, primaryKey, timestamp, uuid } from "drizzle-orm/pg-core";

/**
 * Telemetry as received, one row per heartbeat.
 *
 * In PostgreSQL this is a table partitioned by range of `recorded_at`, one partition per UTC day
 * (`telemetry_events_pYYYYMMDD`) plus a default partition that catches rows for days without one.
 * drizzle-kit cannot express partitioning: migration 0002's telemetry statement was edited by hand
 * and 0003 adds the partition functions. The columns, key and index here match that SQL.
 * No foreign key to devices: deleting a device deletes its telemetry explicitly.
 */
export const telemetryEvents = pgTable(
  "telemetry_events",
  {
    /** UUIDv7 (time-ordered): the primary-key index only ever grows at its right edge. */
    id: uuid("id").notNull(),
    deviceId: uuid("device_id").notNull(),
    recordedAt: timestamp("recorded_at", { withTimezone: true }).notNull(),
    /**
     * `json`, not `jsonb`: the text is validated and stored as sent, which makes the insert about
     * half as expensive as jsonb's conversion. Reads are per device and time range (a few hundred
     * rows), where parsing on read costs little; nothing indexes inside payloads.
     */
    payload: json("payload").$type<Record<string, unknown>>().notNull(),
  },
  (table) => [
    primaryKey({ name: "telemetry_events_pkey", columns: [table.id, table.recordedAt] }),
    index("telemetry_events_device_time_idx").on(table.deviceId, table.recordedAt),
  ],
);
