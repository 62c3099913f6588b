import { sql } from "drizzle-orm";
import { index, jsonb, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
// The one table dependency on another feature: commands belong to a device (FK, cascade on delete).
// Code in this feature still reaches devices only through devices/service.
import { devices } from "../devices/schema";
import { COMMAND_TYPES } from "./validation";

export const commandType = pgEnum("command_type", COMMAND_TYPES);

/** queued → delivered → succeeded | failed; queued → expired when the TTL passes undelivered. */
export const commandStatus = pgEnum("command_status", [
  "queued",
  "delivered",
  "succeeded",
  "failed",
  "expired",
]);

export const pendingCommands = pgTable(
  "pending_commands",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    deviceId: uuid("device_id")
      .notNull()
      .references(() => devices.id, { onDelete: "cascade" }),
    type: commandType("type").notNull(),
    args: jsonb("args").$type<unknown[]>().notNull().default([]),
    /** `{content_type, name, data}` or any object the command type needs; NULL for none. */
    payload: jsonb("payload").$type<Record<string, unknown>>(),
    /** Set when the payload is too large to inline: the device fetches it by this ref. */
    payloadRef: text("payload_ref"),
    publicKey: text("public_key"),
    status: commandStatus("status").notNull().default("queued"),
    queuedAt: timestamp("queued_at", { withTimezone: true }).notNull().default(sql`now()`),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    deliveredAt: timestamp("delivered_at", { withTimezone: true }),
    completedAt: timestamp("completed_at", { withTimezone: true }),
    /** The result the device posted (`output`), and its error text for FAILED. */
    output: jsonb("output"),
    error: text("error"),
    /** Who queued it (operator email, token name or "system"). */
    queuedBy: text("queued_by"),
  },
  (table) => [
    // The claim: a device's queued commands in order. Partial, so it stays tiny.
    index("pending_commands_claim_idx")
      .on(table.deviceId, table.queuedAt, table.id)
      .where(sql`${table.status} = 'queued'`),
    index("pending_commands_device_idx").on(table.deviceId, table.queuedAt),
    index("pending_commands_expiry_idx").on(table.expiresAt).where(sql`${table.status} = 'queued'`),
    index("pending_commands_payload_ref_idx").on(table.deviceId, table.payloadRef),
  ],
);

export type CommandRow = typeof pendingCommands.$inferSelect;

/**
 * Results a device posted that belong to no command it was sent: no id (the agent's
 * `missing_command_id`), an id it was never sent (`unknown_command`), or an id repeated in one post
 * (`duplicate_command_id`, the later entries). Kept so operators see them (device page, Commands tab);
 * pruned with the command history.
 */
export const unmatchedCommandResults = pgTable(
  "unmatched_command_results",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    deviceId: uuid("device_id")
      .notNull()
      .references(() => devices.id, { onDelete: "cascade" }),
    /** The id as the device sent it ("" when it sent none), cut to 200 characters. */
    commandId: text("command_id").notNull(),
    reason: text("reason").notNull(),
    /** "OK" or "FAILED", as posted. */
    status: text("status").notNull(),
    output: jsonb("output"),
    error: text("error"),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [index("unmatched_command_results_device_idx").on(table.deviceId, table.receivedAt)],
);
