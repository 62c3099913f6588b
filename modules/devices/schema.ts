import { sql } from "drizzle-orm";
import { boolean, index, integer, jsonb, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

export const approvalStatus = pgEnum("device_approval_status", ["pending", "approved", "rejected"]);

/**
 * One row per physical device, keyed by its normalised MAC address.
 *
 * `last_seen_at` is deliberately not indexed: every heartbeat rewrites it, and leaving it out of all
 * indexes keeps that update HOT (heap-only). Online/offline is computed from it, never stored.
 */
export const devices = pgTable(
  "devices",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    /** Normalised `AA:BB:CC:DD:EE:FF`. */
    macAddress: text("mac_address").notNull().unique(),
    productName: text("product_name"),
    approvalStatus: approvalStatus("approval_status").notNull().default("pending"),
    /** Lower-case hex SHA-256 of the device's API token; NULL until one is issued. */
    apiTokenHash: text("api_token_hash"),
    tokenIssuedAt: timestamp("token_issued_at", { withTimezone: true }),
    ipv4Address: text("ipv4_address"),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull().default({}),
    /**
     * The `key=value` labels the device's agent declares (its `labels:` setting, sent with every
     * registration; shared/labels.ts), as the device sent them. Queries read their copy in `device_tags`
     * (modules/fleet), written by the registration route's `labelsDeclared` hook.
     */
    labels: jsonb("labels").$type<Record<string, string>>().notNull().default({}),
    /** The name operators gave the device; null: the reported or MAC-derived name (device_display_name). */
    displayName: text("display_name"),
    /** Operators' notes on the device. */
    notes: text("notes"),
    /**
     * The telemetry schema the device announced last (registration or heartbeat meta), by its hash in
     * `telemetry_schemas`; heartbeats compare schemas by it without reading them. Null: none announced.
     */
    schemaHash: text("schema_hash").references(() => telemetrySchemas.hash),
    lastSeenAt: timestamp("last_seen_at", { withTimezone: true }),
    /** SHA-256 of the secret the device created at its first registration: proof of its identity. */
    secretHash: text("secret_hash"),
    /**
     * SHA-256 of the claim token an operator got when pre-authorising this MAC: until a registration
     * presents it (as `enrolment_token`), nothing else claims the device. Cleared once claimed.
     */
    claimTokenHash: text("claim_token_hash"),
    /**
     * The pending claim: the first registration of this MAC that could not prove the identity but
     * presented a secret of its own, when it came (none when null). It stays the one an operator
     * accepts or rejects: later registrations with other secrets never replace it (they are refused
     * and counted below), so an operator accepts exactly the claim the page showed.
     */
    identityConflictAt: timestamp("identity_conflict_at", { withTimezone: true }),
    /** The pending claim's secret hash (accepted as the new identity by an operator). */
    conflictSecretHash: text("conflict_secret_hash"),
    /** The address the pending claim first came from. */
    conflictAddress: text("conflict_address"),
    /** The pending claim's latest registration (its agent keeps asking). */
    conflictLastAt: timestamp("conflict_last_at", { withTimezone: true }),
    /** Registrations refused while the claim was pending (other secrets, or none), the latest's time and address. */
    conflictRefusedCount: integer("conflict_refused_count").notNull().default(0),
    conflictRefusedAt: timestamp("conflict_refused_at", { withTimezone: true }),
    conflictRefusedAddress: text("conflict_refused_address"),
    /** Last call to register (a pending device keeps asking for its token; shown while it waits). */
    lastRegistrationAt: timestamp("last_registration_at", { withTimezone: true }),
    remoteAccessRequested: boolean("remote_access_requested").notNull().default(false),
    /** Fixed-window heartbeat rate limit, kept on the row every heartbeat rewrites anyway. */
    heartbeatWindowStartedAt: timestamp("heartbeat_window_started_at", { withTimezone: true }),
    heartbeatWindowCount: integer("heartbeat_window_count").notNull().default(0),
    approvalChangedAt: timestamp("approval_changed_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [
    index("devices_created_at_idx").on(table.createdAt, table.id),
    // Which devices use a schema: its listing, and the prune of schemas none uses (the foreign key's
    // check too). Heartbeats never change it, so their updates stay heap-only.
    index("devices_schema_hash_idx").on(table.schemaHash),
    index("devices_approval_status_idx").on(table.approvalStatus, table.createdAt),
    index("devices_product_name_idx").on(table.productName),
    // The name sort (keyset pages): operators' display name, else the reported or MAC-derived name.
    index("devices_name_idx").on(
      sql`coalesce(${table.displayName}, device_display_name(${table.metadata}, ${table.macAddress}))`,
      table.id,
    ),
    // Free text that only a MAC-derived name holds (`device`, `ice-a1b2`, modules/devices/conditions.ts):
    // the devices shown by such a name, without reading the others. Heartbeats write neither column.
    index("devices_derived_name_idx")
      .on(table.createdAt, table.id)
      .where(sql`${table.displayName} is null and nullif(${table.metadata}->>'name', '') is null`),
    // The list filtered by approval and product together (a fleet's pending devices of one model),
    // newest first, and its count: without it, the count reads every pending device to find 10,001.
    index("devices_approval_product_idx").on(
      table.approvalStatus,
      table.productName,
      table.createdAt,
      table.id,
    ),
  ],
);

export type DeviceRow = typeof devices.$inferSelect;

/**
 * Every telemetry schema devices announced, once per content: keyed by its hash (SHA-256 of the
 * canonical JSON, computed by the server, modules/devices/validation.ts). A fleet announces a handful,
 * and kept off the device row, which every heartbeat rewrites, they leave that row a quarter of its
 * size (~250 bytes instead of ~950 with the built-in scripts' schema inline): a quarter of the pages
 * for the heartbeats' updates to dirty and to log whole after each checkpoint. `announced_at`: the
 * last registration or heartbeat that stored it; the prune job deletes those no device has any more
 * and nobody announced for a day.
 */
export const telemetrySchemas = pgTable("telemetry_schemas", {
  hash: text("hash").primaryKey(),
  schema: jsonb("schema").$type<Record<string, unknown>>().notNull(),
  announcedAt: timestamp("announced_at", { withTimezone: true }).notNull().default(sql`now()`),
});

/**
 * Which devices each heartbeat batch accepted, stamped with the batch's `now()`, the very value it
 * wrote to their `last_seen_at`: an index on `last_seen_at` would cost every heartbeat its HOT update,
 * one row here costs a batch one small insert. The device list reads it backwards to find the most
 * recently seen devices and who is online without reading the fleet (modules/devices/sightings.ts).
 * Kept SIGHTINGS_RETENTION_SECONDS; then the `device_sightings_prune` job moves each sighting that is
 * still its device's latest to `device_last_sightings` and deletes the rest.
 */
export const deviceSightings = pgTable(
  "device_sightings",
  {
    seenAt: timestamp("seen_at", { withTimezone: true }).notNull(),
    deviceIds: uuid("device_ids").array().notNull(),
  },
  (table) => [index("device_sightings_seen_at_idx").on(table.seenAt)],
);

/**
 * The latest sighting of each device not seen for SIGHTINGS_RETENTION_SECONDS (a silent device), moved
 * here from `device_sightings` by the prune job: with it, every device that was ever seen has its
 * latest sighting in one of the two tables. A row whose device was seen again since is stale (its
 * `seen_at` is not the device's `last_seen_at`) until the device falls silent again and it is replaced.
 */
export const deviceLastSightings = pgTable(
  "device_last_sightings",
  {
    deviceId: uuid("device_id")
      .primaryKey()
      .references(() => devices.id, { onDelete: "cascade" }),
    seenAt: timestamp("seen_at", { withTimezone: true }).notNull(),
  },
  (table) => [index("device_last_sightings_seen_at_idx").on(table.seenAt, table.deviceId)],
);

/**
 * Fixed-window counters of the device API limits that have no device row to live on: registrations
 * per client address (`register:<ip>`), command results and payload fetches per device
 * (`commands:<uuid>`). Heartbeats count on the device row instead (inside their one statement).
 * Shared by every web process, like the heartbeat counter.
 */
export const deviceApiRateLimits = pgTable("device_api_rate_limits", {
  key: text("key").primaryKey(),
  windowStartedAt: timestamp("window_started_at", { withTimezone: true }).notNull().default(sql`now()`),
  count: integer("count").notNull().default(0),
});
