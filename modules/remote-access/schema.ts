import { sql } from "drizzle-orm";
import { index, integer, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { devices } from "../devices/schema";

/**
 * Who asked for remote access to a device, until when. A lease is active while `ended_at` is NULL and
 * `expires_at` is in the future; `devices.remote_access_requested` mirrors "has an active lease" and is
 * changed in the same transaction as the leases (modules/remote-access/service.ts).
 */
export const remoteAccessLeases = pgTable(
  "remote_access_leases",
  {
    id: uuid("id").primaryKey(),
    deviceId: uuid("device_id")
      .notNull()
      .references(() => devices.id, { onDelete: "cascade" }),
    /** `console` (a detail page holds it, renewed by its live connection), `api` or `terminal`. */
    ownerKind: text("owner_kind").$type<"console" | "api" | "terminal">().notNull(),
    /** The operator (session) or API token that holds the lease, and a label to show. */
    operatorId: uuid("operator_id"),
    apiTokenId: uuid("api_token_id"),
    holder: text("holder").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
    renewedAt: timestamp("renewed_at", { withTimezone: true }).notNull().default(sql`now()`),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    /** created_at + REMOTE_ACCESS_MAX_MINUTES: renewals never extend past it. */
    maxExpiresAt: timestamp("max_expires_at", { withTimezone: true }).notNull(),
    endedAt: timestamp("ended_at", { withTimezone: true }),
    /**
     * `operator_closed` (Close remote access: the device stays closed until someone asks again),
     * `closed` (its holder released it: API DELETE), `page_left`, `terminal_ended`, `expired`,
     * `device_offline`, `revoked`.
     */
    endReason: text("end_reason"),
    /** Who ended it, when someone did (the operator's email, `token <name>`). */
    endedBy: text("ended_by"),
  },
  (table) => [
    index("remote_access_leases_open_idx").on(table.deviceId).where(sql`ended_at is null`),
    index("remote_access_leases_expiry_idx").on(table.expiresAt).where(sql`ended_at is null`),
  ],
);

/**
 * One-time "Open web UI" tickets: only the SHA-256 of the ticket is stored; `used_at` makes it single use.
 */
export const remoteAccessTickets = pgTable("remote_access_tickets", {
  ticketHash: text("ticket_hash").primaryKey(),
  leaseId: uuid("lease_id")
    .notNull()
    .references(() => remoteAccessLeases.id, { onDelete: "cascade" }),
  deviceId: uuid("device_id").notNull(),
  operatorId: uuid("operator_id"),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  usedAt: timestamp("used_at", { withTimezone: true }),
});

/**
 * Live tunnel state, so every web process and the console see it: one row per device whose agent is
 * connected to a tunnel process (`instance`), or that failed (`last_error`).
 */
export const tunnelConnections = pgTable("tunnel_connections", {
  deviceId: uuid("device_id")
    .primaryKey()
    .references(() => devices.id, { onDelete: "cascade" }),
  instance: text("instance").notNull(),
  connectedAt: timestamp("connected_at", { withTimezone: true }).notNull().default(sql`now()`),
  /** Forwards the agent asked for and got (`http`, `ssh`). */
  forwards: text("forwards").array().notNull().default(sql`'{}'::text[]`),
});

/**
 * The running tunnel processes and where the others reach them: the HTTP front (a front that does not
 * hold a device forwards its request there) and the multiplexer (web processes dial the holder's).
 * Each process refreshes `seen_at`; a row not refreshed for a while is a stopped or killed process, and
 * its devices' `tunnel_connections` rows are swept (modules/remote-access/tunnel/instances.ts).
 */
export const tunnelInstances = pgTable("tunnel_instances", {
  instance: text("instance").primaryKey(),
  httpHost: text("http_host").notNull(),
  httpPort: integer("http_port").notNull(),
  muxHost: text("mux_host").notNull(),
  muxPort: integer("mux_port").notNull(),
  seenAt: timestamp("seen_at", { withTimezone: true }).notNull().default(sql`now()`),
});

/**
 * Device pages' live streams that hold a console lease, one row per open stream, whichever web process
 * serves it. A page's lease ends (after the grace period) only when no row of it is left, so a tab on one
 * process keeps the lease a closing tab on another process gave up. Each process refreshes its rows'
 * `expires_at`; rows of a killed process stop counting once it passes.
 */
export const remoteAccessPageStreams = pgTable(
  "remote_access_page_streams",
  {
    id: uuid("id").primaryKey(),
    leaseId: uuid("lease_id")
      .notNull()
      .references(() => remoteAccessLeases.id, { onDelete: "cascade" }),
    openedAt: timestamp("opened_at", { withTimezone: true }).notNull().default(sql`now()`),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (table) => [
    index("remote_access_page_streams_lease_idx").on(table.leaseId),
    index("remote_access_page_streams_expiry_idx").on(table.expiresAt),
  ],
);
