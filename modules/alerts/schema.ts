import { sql } from "drizzle-orm";
import {
  boolean,
  index,
  integer,
  pgTable,
  primaryKey,
  serial,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { savedViews } from "../fleet/schema";

/**
 * Alert rules (docs/alerts.md). Integer ids as in the reference (JSON:API `alert_rule`). The name is
 * unique case-insensitively. The product is the schema its condition field is chosen from; the scope
 * says which devices it watches. No foreign keys to devices: this feature reads devices through the
 * devices service only.
 */
export const alertRules = pgTable(
  "alert_rules",
  {
    id: serial("id").primaryKey(),
    name: text("name").notNull(),
    productName: text("product_name").notNull(),
    conditionField: text("condition_field").notNull(),
    /** The field's `value_type` when the rule was saved: evaluation compares numbers or text by it. */
    fieldType: text("field_type").notNull(),
    operator: text("operator").notNull(),
    thresholdValue: text("threshold_value").notNull(),
    /** Hysteresis: a numeric rule recovers only past this value (null: when the condition stops holding). */
    clearThreshold: text("clear_threshold"),
    forMinutes: integer("for_minutes").notNull().default(0),
    /** Auto-resolve after the condition has not held for this long; null = resolved by hand only. */
    resolveAfterMinutes: integer("resolve_after_minutes"),
    severity: text("severity").notNull().default("warning"),
    enabled: boolean("enabled").notNull().default(true),
    /**
     * Which devices the rule watches (modules/fleet/scope.ts): `product` (every device of
     * product_name), `fleet`, `devices` (device_ids), `view` (scope_view_id, followed as it changes)
     * or `query` (scope_query). A view in use cannot be deleted (restrict).
     */
    scopeType: text("scope_type").notNull().default("product"),
    deviceIds: uuid("device_ids").array(),
    scopeViewId: uuid("scope_view_id").references(() => savedViews.id, { onDelete: "restrict" }),
    scopeQuery: text("scope_query"),
    /** Extra email recipients of this rule's alerts (besides Settings' recipients). */
    recipients: text("recipients").array().notNull().default(sql`'{}'::text[]`),
    createdBy: text("created_by"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [
    uniqueIndex("alert_rules_unique_name_index").on(sql`lower(${table.name})`),
    index("alert_rules_product_idx").on(table.productName),
  ],
);

/**
 * Alerts: `threshold` (a rule held for a device) or `offline`. At most one open (active or
 * acknowledged) alert per (device, rule) and one open offline alert per device: the partial unique
 * indexes make evaluation idempotent (a retried run inserts nothing new).
 */
export const alerts = pgTable(
  "alerts",
  {
    id: uuid("id").primaryKey(),
    type: text("type").notNull(),
    status: text("status").notNull().default("active"),
    severity: text("severity").notNull(),
    message: text("message").notNull(),
    deviceId: uuid("device_id").notNull(),
    ruleId: integer("rule_id"),
    /** The value that breached (threshold alerts), as text. */
    value: text("value"),
    triggeredAt: timestamp("triggered_at", { withTimezone: true }).notNull().default(sql`now()`),
    acknowledgedAt: timestamp("acknowledged_at", { withTimezone: true }),
    acknowledgedBy: text("acknowledged_by"),
    ackNote: text("ack_note"),
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
    /** Operator who resolved it; null when resolved automatically (see `resolution`). */
    resolvedBy: text("resolved_by"),
    resolution: text("resolution"),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [
    uniqueIndex("alerts_open_rule_idx")
      .on(table.deviceId, table.ruleId)
      .where(sql`status <> 'resolved' and type = 'threshold'`),
    uniqueIndex("alerts_open_offline_idx")
      .on(table.deviceId)
      .where(sql`status <> 'resolved' and type = 'offline'`),
    index("alerts_triggered_idx").on(table.triggeredAt, table.id),
    index("alerts_device_idx").on(table.deviceId, table.triggeredAt),
  ],
);

/** Per (rule, device) evaluation state: when the condition started/stopped holding (for `for` and auto-resolve). */
export const alertRuleStates = pgTable(
  "alert_rule_states",
  {
    ruleId: integer("rule_id").notNull(),
    deviceId: uuid("device_id").notNull(),
    breachSince: timestamp("breach_since", { withTimezone: true }),
    clearSince: timestamp("clear_since", { withTimezone: true }),
    /** This episode opened an alert that auto-resolve has not closed: no second alert while it holds. */
    alerting: boolean("alerting").notNull().default(false),
    /** Time of the last telemetry event evaluated: older events are skipped (retries are idempotent). */
    evaluatedAt: timestamp("evaluated_at", { withTimezone: true }).notNull(),
    lastValue: text("last_value"),
  },
  (table) => [primaryKey({ columns: [table.ruleId, table.deviceId] })],
);

/** Where evaluation has read telemetry up to (one row, id 1), advanced in the same transaction as the alerts. */
export const alertEvaluationCursor = pgTable("alert_evaluation_cursor", {
  id: integer("id").primaryKey(),
  recordedAt: timestamp("recorded_at", { withTimezone: true }).notNull(),
  eventId: uuid("event_id").notNull(),
});

/** Each notification of an alert (email or webhook, on trigger or resolve) and its delivery attempts. */
export const alertNotifications = pgTable(
  "alert_notifications",
  {
    id: uuid("id").primaryKey(),
    alertId: uuid("alert_id"),
    channel: text("channel").notNull(),
    event: text("event").notNull(),
    /** pending | sent | failed | suppressed (flap guard) */
    status: text("status").notNull().default("pending"),
    /** Email recipients at the time the alert changed (Settings' plus the rule's). */
    recipients: text("recipients").array().notNull().default(sql`'{}'::text[]`),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true }),
    sentAt: timestamp("sent_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().default(sql`now()`),
  },
  (table) => [index("alert_notifications_alert_idx").on(table.alertId, table.createdAt)],
);
