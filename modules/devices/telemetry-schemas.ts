// The telemetry schemas devices announced, as the script builder lists and loads them.
import type { Sql } from "../platform/database";

export interface SchemaReference {
  product: string;
  version: string;
  /** How many different schemas devices announced for this product/version. */
  variants: number;
  devices: number;
}

/** Every (product, version) some device announced a schema for, sorted. */
export async function listTelemetrySchemas(sql: Sql): Promise<SchemaReference[]> {
  return sql<SchemaReference[]>`
    select schema->>'product' as product, coalesce(nullif(schema->>'version', ''), 'v1') as version,
      count(distinct schema_hash)::int as variants, count(*)::int as devices
    from devices
    where schema <> '{}'::jsonb and coalesce(schema->>'product', '') <> ''
    group by 1, 2 order by 1, 2`;
}

/** The distinct schemas announced for a product/version (empty: none; several: a conflict). */
export async function findTelemetrySchemas(
  sql: Sql,
  product: string,
  version: string,
): Promise<Record<string, unknown>[]> {
  const rows = await sql<{ schema: Record<string, unknown> }[]>`
    select distinct on (schema_hash) schema from devices
    where schema <> '{}'::jsonb and schema->>'product' = ${product}
      and coalesce(nullif(schema->>'version', ''), 'v1') = ${version}
    order by schema_hash limit 10`;
  return rows.map((r) => r.schema);
}
