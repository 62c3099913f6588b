// The audit log's record of remote access: one event when a lease starts and one when it ends, written in
// the lease's own transaction. A device page visit that only reuses a lease adds nothing (issue 42: every
// visit logged a `remote_access.view` and a `remote_access.close`, and hid the events that matter).
import { type AuditEventInput, recordAuditIn } from "../audit/service";
import type { Sql } from "../platform/database";

interface LeaseAuditRow {
  id: string;
  device_id: string;
  owner_kind: string;
  holder: string;
  end_reason: string | null;
  ended_by: string | null;
}

/** The holder as the audit log names callers: the operator's email, or `token <name>`. */
function actorOf(row: LeaseAuditRow): Pick<AuditEventInput, "actor" | "actorKind"> {
  return row.owner_kind === "api"
    ? { actorKind: "token", actor: `token ${row.holder.replace(/^API token /, "")}` }
    : { actorKind: "operator", actor: row.holder };
}

/** `remote_access.start` / `remote_access.end` (with the reason, and who ended it) for each lease. */
export async function auditLeases(sql: Sql, what: "start" | "end", rows: LeaseAuditRow[]): Promise<void> {
  await recordAuditIn(
    sql,
    rows.map((row) => ({
      ...actorOf(row),
      action: `remote_access.${what}`,
      target: `device:${row.device_id}`,
      status: 200,
      details: {
        lease_id: row.id,
        owner: row.owner_kind,
        ...(what === "end" ? { reason: row.end_reason } : {}),
        ...(what === "end" && row.ended_by ? { ended_by: row.ended_by } : {}),
      },
    })),
  );
}
