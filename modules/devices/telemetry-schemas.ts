// The telemetry schemas devices announced (table `telemetry_schemas`, once per content): stored when a
// registration or heartbeat brings one, listed and loaded by the script builder, alerts and reports.
import type { Sql } from "../platform/database";
import { jsonTextsParam } from "../platform/database";
import type { AnnouncedSchema } from "./validation";

export interface SchemaReference {
  product: string;
  version: string;
  /** How many different schemas devices announced for this product/version. */
  variants: number;
  devices: number;
}

/** A schema no device has is kept this long after it was last announced, then pruned. */
export const UNUSED_SCHEMA_RETENTION_SECONDS = 86_400;

/**
 * Stores announced schemas by hash (a known one only has `announced_at` renewed), before a device row
 * refers to them. Schemas change rarely: a registration, or a heartbeat whose schema is not its
 * device's.
 */
export async function storeTelemetrySchemas(sql: Sql, schemas: AnnouncedSchema[]): Promise<void> {
  const byHash = new Map(schemas.map((s) => [s.hash, s.json]));
  if (byHash.size === 0) return;
  await sql`
    insert into telemetry_schemas as t (hash, schema)
    select s.hash, s.json::jsonb
    from unnest(${[...byHash.keys()]}::text[], ${jsonTextsParam(sql, [...byHash.values()])}) as s(hash, json)
    on conflict (hash) do update set announced_at = now()`;
}

/** Every (product, version) some device announced a schema for, sorted. */
export async function listTelemetrySchemas(sql: Sql): Promise<SchemaReference[]> {
  return sql<SchemaReference[]>`
    select s.schema->>'product' as product, coalesce(nullif(s.schema->>'version', ''), 'v1') as version,
      count(distinct s.hash)::int as variants, sum(u.devices)::int as devices
    from telemetry_schemas s
    join (select schema_hash, count(*) as devices from devices where schema_hash is not null group by 1) u
      on u.schema_hash = s.hash
    where coalesce(s.schema->>'product', '') <> ''
    group by 1, 2 order by 1, 2`;
}

/** The distinct schemas devices have for a product/version (empty: none; several: a conflict). */
export async function findTelemetrySchemas(
  sql: Sql,
  product: string,
  version: string,
): Promise<Record<string, unknown>[]> {
  const rows = await sql<{ schema: Record<string, unknown> }[]>`
    select s.schema from telemetry_schemas s
    where s.schema->>'product' = ${product} and coalesce(nullif(s.schema->>'version', ''), 'v1') = ${version}
      and exists (select 1 from devices d where d.schema_hash = s.hash)
    order by s.hash limit 10`;
  return rows.map((r) => r.schema);
}

/**
 * Deletes the schemas no device has and nobody announced for `retentionSeconds` (a device that changes
 * its schema leaves the old one behind). Returns how many.
 */
export async function pruneTelemetrySchemas(
  sql: Sql,
  retentionSeconds = UNUSED_SCHEMA_RETENTION_SECONDS,
): Promise<number> {
  const deleted = await sql`
    delete from telemetry_schemas s
    where s.announced_at < now() - make_interval(secs => ${retentionSeconds})
      and not exists (select 1 from devices d where d.schema_hash = s.hash)`;
  return deleted.count;
}
