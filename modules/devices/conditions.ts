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
   * reported name or hostname (device_search_text, trigram-indexed), or operators' display name; a
   * whole device id matches that device (PostgreSQL reads a uuid in either case). Case-insensitive.
   */
  text: (sql: Sql, text: string): DeviceCondition => {
    const pattern = likeContains(text.toLowerCase());
    return isUuid(text)
      ? sql`d.id = ${text}::uuid`
      : sql`(device_search_text(d.mac_address, d.product_name, d.ipv4_address, d.metadata) like ${pattern}
          or lower(d.display_name) like ${pattern})`;
  },
};
