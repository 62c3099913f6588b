import { and, desc, eq, lt, or, sql } from "drizzle-orm";
import type { Database, Sql } from "../platform/database";
import { encodeKeysetCursor, parseKeysetCursor } from "../platform/keyset-cursor";
import { storableText, storableValue } from "../platform/text-input";
import { auditEvents } from "./schema";

export type AuditActorKind = "operator" | "token" | "runner" | "anonymous";

export interface AuditEventInput {
  actorKind: AuditActorKind;
  actor: string;
  action: string;
  target?: string | null;
  status: number;
  address?: string | null;
  details?: Record<string, unknown>;
}

export type AuditEvent = typeof auditEvents.$inferSelect;

/** Appends one event. Other features call this for what the HTTP recorder cannot see (sign-in). */
export async function recordAudit(database: Database, event: AuditEventInput): Promise<void> {
  // A refused request is recorded with what it carried, which may be text PostgreSQL cannot store.
  await database.db.insert(auditEvents).values({
    actorKind: event.actorKind,
    actor: storableText(event.actor.slice(0, 320)),
    action: event.action,
    target: event.target ? storableText(event.target) : null,
    status: event.status,
    address: event.address ?? null,
    details: storableValue(event.details ?? {}),
  });
}

/**
 * Appends events inside the caller's transaction (postgres.js): what a service records together with
 * the change itself, so neither is kept without the other (remote-access leases starting and ending).
 */
export async function recordAuditIn(sql: Sql, events: AuditEventInput[]): Promise<void> {
  for (const event of events) {
    await sql`insert into audit_events (actor_kind, actor, action, target, status, address, details)
      values (${event.actorKind}, ${storableText(event.actor.slice(0, 320))}, ${event.action},
        ${event.target ? storableText(event.target) : null}, ${event.status}, ${event.address ?? null},
        ${JSON.stringify(storableValue(event.details ?? {}))}::jsonb)`;
  }
}

export interface AuditFilters {
  actor?: string;
  action?: string;
  target?: string;
  from?: Date;
  to?: Date;
}

export const AUDIT_PAGE = 50;

/** Newest first, keyset pages (`cursor` from the previous page's `nextCursor`). */
export async function listAudit(
  database: Database,
  filters: AuditFilters,
  options: { limit?: number; cursor?: string } = {},
): Promise<{ events: AuditEvent[]; nextCursor: string | undefined }> {
  const limit = Math.min(options.limit ?? AUDIT_PAGE, 500);
  const conditions = [
    filters.actor ? eq(auditEvents.actor, filters.actor) : undefined,
    filters.action ? eq(auditEvents.action, filters.action) : undefined,
    filters.target ? eq(auditEvents.target, filters.target) : undefined,
    filters.from ? sql`${auditEvents.at} >= ${filters.from.toISOString()}` : undefined,
    filters.to ? sql`${auditEvents.at} < ${filters.to.toISOString()}` : undefined,
  ];
  if (options.cursor) {
    const [at, id] = parseKeysetCursor(options.cursor, { time: true }) as [string, string];
    conditions.push(
      or(
        sql`${auditEvents.at} < ${at}::timestamptz`,
        and(sql`${auditEvents.at} = ${at}::timestamptz`, lt(auditEvents.id, id)),
      ),
    );
  }
  const rows = await database.db
    .select()
    .from(auditEvents)
    .where(and(...conditions.filter((c) => c !== undefined)))
    .orderBy(desc(auditEvents.at), desc(auditEvents.id))
    .limit(limit + 1);
  const events = rows.slice(0, limit);
  const last = events.at(-1);
  return {
    events,
    nextCursor:
      rows.length > limit && last ? encodeKeysetCursor([last.at.toISOString(), last.id]) : undefined,
  };
}

/** Deletes events older than `days`; returns how many. */
export async function pruneAudit(database: Database, days: number): Promise<number> {
  const deleted = await database.db
    .delete(auditEvents)
    .where(sql`${auditEvents.at} < now() - make_interval(days => ${days})`);
  return deleted.count;
}
