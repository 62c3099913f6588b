import type { Sql } from "postgres";
import { randomToken, sha256Hex } from "../platform/crypto";
import { isUuid } from "../platform/json-body";
import { type Claims, signCredential, verifyCredential } from "./token";

/** How long an "Open web UI" ticket may wait to be used. */
export const TICKET_SECONDS = 60;
/** The per-device access cookie the vhost front sets (host-only: no Domain attribute). */
export const ACCESS_COOKIE = "outpost_remote_access";
/** How long a positive lease check of a cookie is trusted by one tunnel process. */
const COOKIE_RECHECK_MS = 2000;

/** Issues a one-time ticket (only its hash is stored) bound to operator, device and lease. */
export async function issueTicket(
  sql: Sql,
  input: { leaseId: string; deviceId: string; operatorId: string | null },
): Promise<string> {
  const ticket = randomToken(32);
  await sql`insert into remote_access_tickets (ticket_hash, lease_id, device_id, operator_id, expires_at)
    values (${sha256Hex(ticket)}, ${input.leaseId}::uuid, ${input.deviceId}::uuid, ${input.operatorId}::uuid,
      now() + make_interval(secs => ${TICKET_SECONDS}::int))`;
  return ticket;
}

/**
 * Uses a ticket for `deviceId` (once: a second use, another device's host, an expired ticket or an ended
 * lease all fail) and returns the access cookie value, valid until the lease's hard maximum.
 */
export async function redeemTicket(
  sql: Sql,
  secret: string,
  ticket: string,
  deviceId: string,
): Promise<{ cookie: string; maxAgeSeconds: number } | undefined> {
  if (!ticket || ticket.length > 256) return undefined;
  const [row] = await sql<{ lease_id: string; operator_id: string | null; until: Date }[]>`
    update remote_access_tickets t set used_at = now()
    from remote_access_leases l
    where t.ticket_hash = ${sha256Hex(ticket)} and t.used_at is null and t.expires_at > now()
      and t.device_id = ${deviceId}::uuid and l.id = t.lease_id and l.ended_at is null and l.expires_at > now()
    returning t.lease_id::text, t.operator_id::text, l.max_expires_at as until`;
  if (!row) return undefined;
  const untilMs = row.until.getTime();
  const claims: Claims = { d: deviceId, l: row.lease_id, exp: Math.floor(untilMs / 1000) };
  if (row.operator_id) claims.o = row.operator_id;
  return {
    cookie: signCredential(secret, "cookie", claims),
    maxAgeSeconds: Math.max(1, Math.floor((untilMs - Date.now()) / 1000)),
  };
}

/**
 * Checks access cookies: signature, device, expiry, and that the lease it was issued under is still
 * active (cached per lease for 2 s, so a stream of requests costs one query per 2 s, and a lease's end
 * is honoured within 2 s).
 */
export class CookieChecker {
  private readonly checked = new Map<string, number>();

  constructor(
    private readonly sql: Sql,
    private readonly secret: string,
    /** Milliseconds since the epoch; the cache's clock (a test advances it instead of sleeping). */
    private readonly now: () => number = Date.now,
  ) {}

  async allows(cookie: string | undefined, deviceId: string): Promise<boolean> {
    const claims = verifyCredential(this.secret, "cookie", cookie);
    if (!claims || claims.d !== deviceId || !claims.l || !isUuid(claims.l)) return false;
    const at = this.checked.get(claims.l);
    if (at !== undefined && this.now() - at < COOKIE_RECHECK_MS) return true;
    const rows = await this.sql`select 1 from remote_access_leases where id = ${claims.l}::uuid
      and device_id = ${deviceId}::uuid and ended_at is null and expires_at > now()`;
    if (rows.length === 0) {
      this.checked.delete(claims.l);
      return false;
    }
    if (this.checked.size > 10_000) this.checked.clear();
    this.checked.set(claims.l, this.now());
    return true;
  }
}
