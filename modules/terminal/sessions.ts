import { deviceNames } from "../devices/service";
import type { Sql } from "../platform/database";
import { isUuid } from "../platform/json-body";

/** A terminal session as the sessions lists and the playback page show it. */
export interface SessionSummary {
  id: string;
  deviceId: string;
  deviceName: string;
  operatorEmail: string;
  createdAt: Date;
  connectedAt: Date | null;
  endedAt: Date | null;
  endReason: string | null;
  exitStatus: number | null;
  recordsInput: boolean;
  recordingBytes: number;
  storedBytes: number;
}

type Row = {
  id: string;
  device_id: string;
  operator_email: string;
  created_at: Date;
  connected_at: Date | null;
  ended_at: Date | null;
  end_reason: string | null;
  exit_status: number | null;
  records_input: boolean;
  recording_bytes: number | string;
  stored_bytes: number | string;
};

const COLUMNS = `id, device_id, operator_email, created_at, connected_at, ended_at, end_reason, exit_status,
  records_input, recording_bytes, stored_bytes`;

async function summaries(sql: Sql, rows: Row[]): Promise<SessionSummary[]> {
  const names = await deviceNames(
    sql,
    rows.map((r) => r.device_id),
  );
  return rows.map((row) => ({
    id: row.id,
    deviceId: row.device_id,
    deviceName: names.get(row.device_id) ?? row.device_id,
    operatorEmail: row.operator_email,
    createdAt: row.created_at,
    connectedAt: row.connected_at,
    endedAt: row.ended_at,
    endReason: row.end_reason,
    exitStatus: row.exit_status,
    recordsInput: row.records_input,
    recordingBytes: Number(row.recording_bytes),
    storedBytes: Number(row.stored_bytes),
  }));
}

export const SESSIONS_PAGE = 50;

/**
 * Sessions newest first, for one device or the fleet, optionally those of operators whose email
 * contains `operator`; keyset pages by (created_at, id), `before` = the last id of the previous page.
 */
export async function listSessions(
  sql: Sql,
  filter: { deviceId?: string; operator?: string; before?: string; limit?: number },
): Promise<{ sessions: SessionSummary[]; next: string | undefined }> {
  const limit = filter.limit ?? SESSIONS_PAGE;
  const device = filter.deviceId && isUuid(filter.deviceId) ? filter.deviceId : null;
  const operator =
    filter.operator
      ?.trim()
      .toLowerCase()
      .replace(/[\\%_]/g, (c) => `\\${c}`) || null;
  const before = filter.before && isUuid(filter.before) ? filter.before : null;
  const rows = await sql<Row[]>`
    select ${sql.unsafe(COLUMNS)} from terminal_sessions s
    where (${device}::uuid is null or s.device_id = ${device}::uuid)
      and (${operator}::text is null or lower(s.operator_email) like '%' || ${operator}::text || '%')
      and (${before}::uuid is null or (s.created_at, s.id) < (
        select created_at, id from terminal_sessions where id = ${before}::uuid))
    order by s.created_at desc, s.id desc
    limit ${limit + 1}`;
  const sessions = await summaries(sql, rows.slice(0, limit));
  return { sessions, next: rows.length > limit ? sessions.at(-1)?.id : undefined };
}

export async function getSession(sql: Sql, id: string): Promise<SessionSummary | undefined> {
  if (!isUuid(id)) return undefined;
  const rows = await sql<Row[]>`select ${sql.unsafe(COLUMNS)} from terminal_sessions where id = ${id}::uuid`;
  return (await summaries(sql, rows))[0];
}

/** Seconds between connection and end (or now), or undefined when it never connected. */
export function sessionSeconds(session: SessionSummary, now = Date.now()): number | undefined {
  if (!session.connectedAt) return undefined;
  return Math.max(
    0,
    Math.round(((session.endedAt?.getTime() ?? now) - session.connectedAt.getTime()) / 1000),
  );
}
