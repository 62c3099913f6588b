import { index, jsonb, pgTable, smallint, text, timestamp, uuid } from "drizzle-orm/pg-core";

/**
 * Who did what, when: one row per state-changing request of an operator, API token or E2E runner,
 * and per sign-in attempt. Append-only (only retention deletes); secrets are never written.
 */
export const auditEvents = pgTable(
  "audit_events",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    // Milliseconds, as a page cursor carries them (so no event is skipped between pages).
    at: timestamp("at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    /** `operator` (session), `token`, `runner`, or `anonymous` (a failed sign-in). */
    actorKind: text("actor_kind").notNull(),
    /** The operator's email, `token <name>`, the runner id, or the email a sign-in tried. */
    actor: text("actor").notNull(),
    /** What was done, e.g. `device.approve` (modules/audit/actions.ts). */
    action: text("action").notNull(),
    /** What it was done to: `device:<id>`, `operator:<id>` … (null when nothing in particular). */
    target: text("target"),
    /** HTTP status of the answer: 2xx/3xx done, 4xx refused. */
    status: smallint("status").notNull(),
    address: text("address"),
    /** Non-secret details (e.g. a command's type, a new role). */
    details: jsonb("details").$type<Record<string, unknown>>().notNull().default({}),
  },
  (table) => [
    index("audit_events_at_idx").on(table.at, table.id),
    index("audit_events_actor_idx").on(table.actor, table.at),
    index("audit_events_target_idx").on(table.target, table.at),
  ],
);
