import type { Sql } from "../platform/database";

/**
 * The devices whose announced telemetry schema is `product`/`version` (version "v1" when the schema
 * has none, as the builder schemas count it), as a subquery for another module's statement: custom
 * reports scope their telemetry to a builder schema with it. Scoped by the schema a device announces
 * now, not by the schema it had when each event was recorded.
 */
export function devicesOfSchema(sql: Sql, product: string, version: string) {
  return sql`select d.id from devices d join telemetry_schemas s on s.hash = d.schema_hash
    where s.schema->>'product' = ${product} and coalesce(nullif(s.schema->>'version', ''), 'v1') = ${version}`;
}
