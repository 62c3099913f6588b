import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  json,
  jsonb,
  pgTable,
  primaryKey,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";

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
    // BRIN: rows arrive in time order, so a few kilobytes per day let the rollup job find the last
    // minute's rows without a btree maintained on every heartbeat.
    index("telemetry_events_recorded_brin").using("brin", table.recordedAt),
  ],
);

/**
 * Hourly rollups per device (./rollups.ts): one row per device and UTC hour with the number of
 * heartbeats and, per numeric payload field, `[count, sum, min, max]` keyed by the field's path
 * (`{"scripts.cpu.data.output.usage_pct": [60, 1234.5, 3.1, 88]}`). Charts over days read these.
 */
export const telemetryHourly = pgTable(
  "telemetry_hourly",
  {
    deviceId: uuid("device_id").notNull(),
    hour: timestamp("hour", { withTimezone: true }).notNull(),
    heartbeats: integer("heartbeats").notNull(),
    stats: jsonb("stats").$type<Record<string, [number, number, number, number]>>().notNull(),
  },
  (table) => [
    primaryKey({ name: "telemetry_hourly_pkey", columns: [table.deviceId, table.hour] }),
    index("telemetry_hourly_hour_idx").on(table.hour),
  ],
);

/**
 * Six-minute rollups per device for the last two days (./rollups.ts): the same row shape as
 * `telemetry_hourly`, one row per device and 6-minute bucket (the 24-hour chart's 240 buckets).
 * In PostgreSQL it is partitioned by UTC day of `bucket` (`telemetry_6min_pYYYYMMDD` plus a
 * default partition; migration 0023, by hand as for telemetry_events): expiring a day is dropping a
 * partition, not deleting millions of rows.
 */
export const telemetry6min = pgTable(
  "telemetry_6min",
  {
    deviceId: uuid("device_id").notNull(),
    bucket: timestamp("bucket", { withTimezone: true }).notNull(),
    heartbeats: integer("heartbeats").notNull(),
    stats: jsonb("stats").$type<Record<string, [number, number, number, number]>>().notNull(),
  },
  (table) => [primaryKey({ name: "telemetry_6min_pkey", columns: [table.deviceId, table.bucket] })],
);

/** Per UTC hour: how many devices sent at least one heartbeat, and how many heartbeats (dashboard). */
export const telemetryFleetHourly = pgTable("telemetry_fleet_hourly", {
  hour: timestamp("hour", { withTimezone: true }).primaryKey(),
  devices: integer("devices").notNull(),
  heartbeats: bigint("heartbeats", { mode: "number" }).notNull(),
});

/** One row: raw telemetry before `rolled_until` is in the rollups (the job's watermark). */
export const telemetryRollupProgress = pgTable(
  "telemetry_rollup_progress",
  {
    singleton: boolean("singleton").primaryKey().default(true),
    rolledUntil: timestamp("rolled_until", { withTimezone: true }).notNull(),
    /** Where the 6-minute tier starts being complete (the upgrade that added it, or the first run). */
    recentFrom: timestamp("recent_from", { withTimezone: true }),
  },
  (table) => [check("telemetry_rollup_progress_singleton", sql`${table.singleton}`)],
);
