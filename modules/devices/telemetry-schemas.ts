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

/** How stale `announced_at` may get before an announcement renews it (far below the retention). */
const RENEW_AFTER_SECONDS = 3600;

/**
 * Stores announced schemas by hash, before a device row refers to them; a known one has its
 * `announced_at` renewed when it is an hour old. Known schemas are neither written nor locked
 * otherwise: a fleet re-registering at once (after an outage) announces the same schema from every
 * device, and an upsert would make them queue on its row. In hash order, so two batches storing the
 * same new schemas wait for each other instead of deadlocking.
 */
export async function storeTelemetrySchemas(sql: Sql, schemas: AnnouncedSchema[]): Promise<void> {
  const byHash = new Map(schemas.map((s) => [s.hash, s.json]));
  const hashes = [...byHash.keys()].sort();
  if (hashes.length === 0) return;
  await sql`
    with given as (
      select * from unnest(${hashes}::text[], ${jsonTextsParam(
        sql,
        hashes.map((hash) => byHash.get(hash)!),
      )}) with ordinality as s(hash, json, n)
    ), added as (
      insert into telemetry_schemas (hash, schema)
      select hash, json::jsonb from given order by n
      on conflict (hash) do nothing
    )
    update telemetry_schemas t set announced_at = now()
    from given g
    where t.hash = g.hash and t.announced_at < now() - make_interval(secs => ${RENEW_AFTER_SECONDS})`;
}

/** A schema's version as the builders name it: its `version`, "v1" when it has none; null for no schema ({}). */
export function schemaVersionOf(schema: Record<string, unknown>): string | null {
  if (Object.keys(schema).length === 0) return null;
  return typeof schema.version === "string" && schema.version !== "" ? schema.version : "v1";
}

/** The hashes of the stored schemas of a product/version (as schemaVersionOf names versions). */
export function schemaHashesOf(sql: Sql, product: string, version: string) {
  return sql`select hash from telemetry_schemas
    where schema->>'product' = ${product} and coalesce(nullif(schema->>'version', ''), 'v1') = ${version}`;
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
    where s.hash in (${schemaHashesOf(sql, product, version)})
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
