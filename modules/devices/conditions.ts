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
   * The ids of devices whose agent declared the label `key` (with one of `values`; null: any value), a
   * subquery for `d.id in (…)`: a bitmap scan of devices_labels_idx (GIN), one containment per value.
   */
  labelledIds: (sql: Sql, key: string, values: string[] | null): DeviceCondition => {
    if (!values) return sql`select l.id from devices l where l.labels ? ${key}`;
    const contains = values.map((value) => sql`l.labels @> ${JSON.stringify({ [key]: value })}::jsonb`);
    const any = contains.slice(1).reduce((all, c) => sql`${all} or ${c}`, contains[0]!);
    return sql`select l.id from devices l where ${any}`;
  },

  /**
   * Free text: part of the MAC address (with or without colons), the product, the IPv4 address, the
   * reported name or hostname (device_search_text, trigram-indexed), or operators' display name; a
   * whole device id matches that device. Case-insensitive.
   */
  text: (sql: Sql, text: string): DeviceCondition => {
    const pattern = likeContains(text.toLowerCase());
    return isUuid(text)
      ? sql`d.id = ${text.toLowerCase()}::uuid`
      : sql`(device_search_text(d.mac_address, d.product_name, d.ipv4_address, d.metadata) like ${pattern}
          or lower(d.display_name) like ${pattern})`;
  },
};

const LABEL_SAMPLE = 5000;

/**
 * Label keys starting with `prefix` that agents declared, or, with `key`, that label's values: read
 * from up to 5,000 labelled devices (suggestions for the search box, not an inventory; docs/fleet.md).
 */
export async function declaredLabels(
  sql: Sql,
  input: { key?: string; prefix: string; limit: number },
): Promise<string[]> {
  const rows = input.key
    ? await sql<{ v: string }[]>`
        select distinct v from (select d.labels ->> ${input.key} as v from devices d
          where d.labels ? ${input.key} limit ${LABEL_SAMPLE}) s
        where starts_with(v, ${input.prefix}) order by v limit ${input.limit}`
    : await sql<{ v: string }[]>`
        select distinct k as v from (select d.labels from devices d
          where d.labels <> '{}'::jsonb limit ${LABEL_SAMPLE}) s, jsonb_object_keys(s.labels) k
        where starts_with(k, ${input.prefix}) order by v limit ${input.limit}`;
  return rows.map((r) => r.v);
}
