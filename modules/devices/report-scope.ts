import type { Sql } from "../platform/database";
import { schemaHashesOf } from "./telemetry-schemas";

/**
 * The devices whose announced telemetry schema is `product`/`version` (version "v1" when the schema
 * has none, as the builder schemas count it), as a subquery for another module's statement: custom
 * reports scope their telemetry to a builder schema with it. Scoped by the schema a device announces
 * now, not by the schema it had when each event was recorded.
 */
export function devicesOfSchema(sql: Sql, product: string, version: string) {
  return sql`select id from devices where schema_hash in (${schemaHashesOf(sql, product, version)})`;
}
