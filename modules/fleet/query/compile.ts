/**
 * A parsed query (./parse.ts) as one SQL condition over `devices d`: the devices feature's conditions
 * (deviceConditions) for its own columns, this feature's tables for tags. Every value is a parameter.
 */
import { type DeviceCondition, deviceConditions } from "../../devices/service";
import type { Sql } from "../../platform/database";
import type { Condition, Query } from "./parse";

export interface CompileOptions {
  /** Seconds since its last heartbeat within which a device counts as online (Settings). */
  onlineWindowSeconds: number;
}

/** `parts` joined by `operator`; never called with none (a query without terms is `true`). */
function join(sql: Sql, parts: DeviceCondition[], operator: "and" | "or"): DeviceCondition {
  return parts.reduce((all, part) => sql`${all} ${sql.unsafe(operator)} ${part}`);
}

/** Devices with the tag, an operator's or one their agent declared (both are rows of device_tags). */
function tagCondition(sql: Sql, key: string, values: string[] | null): DeviceCondition {
  return values
    ? sql`d.id in (select t.device_id from device_tags t where t.key = ${key} and t.value = any(${values}::text[]))`
    : sql`d.id in (select t.device_id from device_tags t where t.key = ${key})`;
}

function conditionSql(sql: Sql, condition: Condition, options: CompileOptions): DeviceCondition {
  switch (condition.kind) {
    case "tag":
      return tagCondition(sql, condition.key, condition.values);
    case "status":
      return deviceConditions.online(sql, condition.value === "online", options.onlineWindowSeconds);
    case "approval":
      return deviceConditions.approvalIn(sql, [condition.value]);
    case "product":
      return deviceConditions.productIn(sql, [condition.value]);
    case "last_seen":
      return deviceConditions.lastSeen(sql, condition.older, condition.seconds);
    case "never_seen":
      return deviceConditions.neverSeen(sql);
    case "text":
      return deviceConditions.text(sql, condition.text);
  }
}

/** The query as a condition (`true` for no terms). A negated term holds where its condition is not true. */
export function compileQuery(sql: Sql, query: Query, options: CompileOptions): DeviceCondition {
  if (query.terms.length === 0) return sql`true`;
  const terms = query.terms.map((term) => {
    const anyOf = join(
      sql,
      term.anyOf.map((c) => sql`(${conditionSql(sql, c, options)})`),
      "or",
    );
    return term.negated ? sql`not coalesce((${anyOf}), false)` : sql`(${anyOf})`;
  });
  return join(sql, terms, "and");
}
