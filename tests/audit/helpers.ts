import type { TestApp } from "../helpers/app";

export type AuditRow = {
  actor_kind: string;
  actor: string;
  action: string;
  target: string | null;
  status: number;
  address: string | null;
  details: Record<string, unknown>;
};

/**
 * The newest event of `action` (with `status`, when given) since `since` (the recorder writes after
 * the answer: wait for it, bounded: 2.5 s at most).
 */
export async function lastEvent(
  app: TestApp,
  action: string,
  since: Date,
  status?: number,
  target?: string,
): Promise<AuditRow> {
  const sql = app.database.sql;
  for (let i = 0; i < 50; i++) {
    const [row] = await sql<AuditRow[]>`
      select actor_kind, actor, action, target, status, address, details from audit_events
      where action = ${action} and at >= ${since.toISOString()}::timestamptz
        ${status === undefined ? sql`` : sql`and status = ${status}`}
        ${target === undefined ? sql`` : sql`and target = ${target}`}
      order by at desc, id desc limit 1`;
    if (row) return row;
    await Bun.sleep(50);
  }
  throw new Error(`no ${action} event`);
}
