import { sql } from "drizzle-orm";
import {
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";

/**
 * A rollout: one action for a fixed set of devices (rollout_targets), driven in waves by the
 * `rollout_drive` job (docs/fleet.md, _Rollouts_). `status`: running → paused ⇄ running →
 * completed | cancelled.
 */
export const rollouts = pgTable(
  "rollouts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    /** The action (model.ts RolloutAction), as the operator gave it. */
    action: jsonb("action").$type<Record<string, unknown>>().notNull(),
    /** How the devices were chosen: `ids`, `query` or `view`, and the query or view name then. */
    targetKind: text("target_kind").$type<"ids" | "query" | "view">().notNull(),
    targetQuery: text("target_query"),
    targetView: text("target_view"),
    /** The canary as asked (a count or a percentage) and the devices it came to. */
    canaryCount: integer("canary_count"),
    canaryPercent: integer("canary_percent"),
    canarySize: integer("canary_size").notNull(),
    total: integer("total").notNull(),
    concurrency: integer("concurrency").notNull(),
    /** A wave pauses when more than this percentage of its devices failed. */
    failureThreshold: integer("failure_threshold").notNull(),
    deadline: timestamp("deadline", { withTimezone: true }).notNull(),
    status: text("status").$type<"running" | "paused" | "completed" | "cancelled">().notNull(),
    /** Why it is paused: `operator` or `threshold`. */
    pauseReason: text("pause_reason").$type<"operator" | "threshold">(),
    currentWave: integer("current_wave").notNull().default(1),
    /** The last wave an operator resumed after its threshold paused it: it does not pause again. */
    thresholdAcceptedWave: integer("threshold_accepted_wave").notNull().default(0),
    createdBy: text("created_by").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().default(sql`now()`),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
  },
  (table) => [
    index("rollouts_created_idx").on(table.createdAt, table.id),
    // The sweep: rollouts not finished.
    index("rollouts_unfinished_idx").on(table.id).where(sql`${table.finishedAt} is null`),
  ],
);

/**
 * The devices a rollout acts on, snapshotted when it was created, and each one's state: queued →
 * delivered → succeeded | failed, or skipped. No foreign key to devices: a deleted device's result
 * stays in the record. `command_id` is unique: one command per device per rollout, ever.
 */
export const rolloutTargets = pgTable(
  "rollout_targets",
  {
    rolloutId: uuid("rollout_id")
      .notNull()
      .references(() => rollouts.id, { onDelete: "cascade" }),
    deviceId: uuid("device_id").notNull(),
    /** The device's name when the rollout was created. */
    deviceName: text("device_name").notNull(),
    position: integer("position").notNull(),
    wave: integer("wave").notNull(),
    state: text("state")
      .$type<"queued" | "delivered" | "succeeded" | "failed" | "skipped">()
      .notNull()
      .default("queued"),
    commandId: uuid("command_id"),
    startedAt: timestamp("started_at", { withTimezone: true }),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
    output: jsonb("output"),
    error: text("error"),
  },
  (table) => [
    primaryKey({ name: "rollout_targets_pkey", columns: [table.rolloutId, table.deviceId] }),
    uniqueIndex("rollout_targets_command_idx").on(table.commandId),
    index("rollout_targets_order_idx").on(table.rolloutId, table.position),
    index("rollout_targets_state_idx").on(table.rolloutId, table.state),
    // The driver's sync: the devices in flight (at most the concurrency), found without a scan.
    index("rollout_targets_in_flight_idx")
      .on(table.rolloutId)
      .where(sql`${table.commandId} is not null and ${table.state} in ('queued', 'delivered')`),
    // Conflicts: a device's unfinished places in rollouts.
    index("rollout_targets_open_idx")
      .on(table.deviceId)
      .where(sql`${table.state} in ('queued', 'delivered')`),
  ],
);
