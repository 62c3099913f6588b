import type { Sql } from "../platform/database";

/**
 * The devices of a product (the product of the schema a device announces, else its registered
 * product name: as alert evaluation assigns rules), as a subquery for another module's statement:
 * custom reports scope their telemetry to a product with it. A device keeps its product whatever
 * scripts it installs or removes, so its history stays in the report.
 */
export function devicesOfProduct(sql: Sql, product: string) {
  return sql`select d.id from devices d left join telemetry_schemas s on s.hash = d.schema_hash
    where coalesce(nullif(s.schema->>'product', ''), d.product_name) = ${product}`;
}
