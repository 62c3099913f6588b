/**
 * Conditions over a `devices d` row that other features compose into device queries (the fleet
 * query language, modules/fleet/compile.ts): the devices feature keeps its columns to itself and
 * hands out these fragments, every value a parameter.
 */
import type { PendingQuery, Row } from "postgres";
import type { Sql } from "../platform/database";
import { isUuid } from "../platform/json-body";
import { likeContains } from "./listing";
import type { ApprovalStatus } from "./rows";

export type DeviceCondition = PendingQuery<Row[]>;

export const deviceConditions = {
  approvalIn: (sql: Sql, statuses: ApprovalStatus[]): DeviceCondition =>
    sql`d.approval_status = any(${statuses}::device_approval_status[])`,

  /** Seen within the online window (`online`), or not (`offline`: never seen counts as offline). */
  online: (sql: Sql, online: boolean, windowSeconds: number): DeviceCondition =>
    online
      ? sql`coalesce(d.last_seen_at >= now() - make_interval(secs => ${windowSeconds}), false)`
      : sql`coalesce(d.last_seen_at < now() - make_interval(secs => ${windowSeconds}), true)`,

  productIn: (sql: Sql, products: string[]): DeviceCondition =>
    sql`d.product_name = any(${products}::text[])`,

  /** Last seen more than (`older`) or less than `seconds` ago; `older` includes devices never seen. */
  lastSeen: (sql: Sql, older: boolean, seconds: number): DeviceCondition =>
    older
      ? sql`coalesce(d.last_seen_at < now() - make_interval(secs => ${seconds}), true)`
      : sql`coalesce(d.last_seen_at >= now() - make_interval(secs => ${seconds}), false)`,

  neverSeen: (sql: Sql): DeviceCondition => sql`d.last_seen_at is null`,

  /**
   * Free text: part of the MAC address (with or without colons), the product, the IPv4 address, the
   * reported name or hostname (device_search_text, trigram-indexed), operators' display name, or the
   * name derived from the MAC (`device-aabbccddeeff`) of a device shown by it; a whole device id
   * matches that device (PostgreSQL reads a uuid in either case). Case-insensitive.
   */
  text: (sql: Sql, text: string): DeviceCondition => {
    const lower = text.toLowerCase();
    const pattern = likeContains(lower);
    if (isUuid(text)) return sql`d.id = ${text}::uuid`;
    return sql`(device_search_text(d.mac_address, d.product_name, d.ipv4_address, d.metadata) like ${pattern}
          or lower(d.display_name) like ${pattern}${derivedNameCondition(sql, lower, pattern)})`;
  },
};

/** What a name derived from a MAC starts with (device_display_name, migration 0005). */
const DERIVED_PREFIX = "device-";

/**
 * ` or …`: devices shown by their MAC-derived name (no display name, no name reported) holding the
 * lower-case `text`, when only such a name can hold it; else nothing (the other conditions suffice).
 */
function derivedNameCondition(sql: Sql, text: string, pattern: string): DeviceCondition {
  const part = derivedNamePart(text);
  if (!part) return sql``;
  // What narrows the candidates through an index: the MAC's first digits in device_search_text (its
  // trigram index), else no name reported (devices_derived_name_idx's predicate, word for word). Only
  // the latter would make the planner read every unnamed device, so the digits do not add it.
  const narrowed = part.digits
    ? sql`device_search_text(d.mac_address, d.product_name, d.ipv4_address, d.metadata) like ${`% ${part.digits}%`}`
    : sql`nullif(d.metadata->>'name', '') is null`;
  return sql` or (d.display_name is null and ${narrowed}
          and device_display_name(d.metadata, d.mac_address) like ${pattern})`;
}

/**
 * Text that a MAC-derived name holds and the MAC itself does not: the end of `device-` followed by the
 * MAC's first digits (`ice-a1b2`, `device-a1b2c3d4e5f6`), or a part of `device` (every such name). The
 * digits start the MAC's colon-less form, which device_search_text holds after a space: matching them
 * there keeps the trigram index in use.
 */
function derivedNamePart(text: string): { digits: string } | undefined {
  const dash = text.indexOf("-");
  if (dash < 0) return DERIVED_PREFIX.includes(text) ? { digits: "" } : undefined;
  const digits = text.slice(dash + 1);
  return DERIVED_PREFIX.endsWith(text.slice(0, dash + 1)) && /^[0-9a-f]{0,12}$/.test(digits)
    ? { digits }
    : undefined;
}
