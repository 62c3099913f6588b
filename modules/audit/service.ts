import type { PendingQuery, Row } from "postgres";
import type { Database, Sql } from "../platform/database";
import { keysetPage, parseKeysetCursor } from "../platform/keyset-cursor";
import { storableText, storableValue } from "../platform/text-input";
import type { auditEvents } from "./schema";

export {
  type AuditNote,
  approvalAction,
  auditNoteOf,
  type FieldChange,
  fieldChanges,
  noteAudit,
  noteChanges,
} from "./notes";

/** `cli`: a `./outpost` command run on the server (admin create, unlock, token create). */
export type AuditActorKind = "operator" | "token" | "runner" | "anonymous" | "cli";

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
  await recordAuditIn(database.sql, [event]);
}

/**
 * Appends events inside the caller's transaction (postgres.js): what a service records together with
 * the change itself, so neither is kept without the other (remote-access leases starting and ending).
 */
export async function recordAuditIn(sql: Sql, events: AuditEventInput[]): Promise<void> {
  for (const event of events) {
    // A refused request is recorded with what it carried, which may be text PostgreSQL cannot store.
    await sql`insert into audit_events (actor_kind, actor, action, target, status, address, details)
      values (${event.actorKind}, ${storableText(event.actor.slice(0, 320))}, ${event.action},
        ${event.target ? storableText(event.target) : null}, ${event.status}, ${event.address ?? null},
        ${JSON.stringify(storableValue(event.details ?? {}))}::jsonb)`;
  }
}

/** A `./outpost` command's change, recorded with actor `cli` (`status`: as the HTTP route would answer). */
export function recordCliAudit(
  database: Database,
  event: { action: string; target?: string | null; status: number; details?: Record<string, unknown> },
): Promise<void> {
  return recordAudit(database, { actorKind: "cli", actor: "cli", ...event });
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
  const sql = database.sql;
  const limit = Math.min(options.limit ?? AUDIT_PAGE, 500);
  const conditions: PendingQuery<Row[]>[] = [sql`true`];
  if (filters.actor) conditions.push(sql`and actor = ${filters.actor}`);
  if (filters.action) conditions.push(sql`and action = ${filters.action}`);
  if (filters.target) conditions.push(sql`and target = ${filters.target}`);
  if (filters.from) conditions.push(sql`and at >= ${filters.from}`);
  if (filters.to) conditions.push(sql`and at < ${filters.to}`);
  if (options.cursor) {
    const [at, id] = parseKeysetCursor(options.cursor, { time: true }) as [string, string];
    conditions.push(sql`and (at, id) < (${at}::timestamptz, ${id}::uuid)`);
  }
  const rows = await sql<AuditEvent[]>`
    select id, at, actor_kind as "actorKind", actor, action, target, status, address, details
    from audit_events where ${conditions.reduce((all, condition) => sql`${all} ${condition}`)}
    order by at desc, id desc limit ${limit + 1}`;
  const { page, nextCursor } = keysetPage(rows, limit, (last) => [last.at.toISOString(), last.id]);
  return { events: page, nextCursor };
}

/** Deletes events older than `days`; returns how many. */
export async function pruneAudit(database: Database, days: number): Promise<number> {
  const deleted =
    await database.sql`delete from audit_events where at < now() - make_interval(days => ${days})`;
  return deleted.count;
}
