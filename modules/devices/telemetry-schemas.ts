// The telemetry schemas devices announced (table `telemetry_schemas`, once per content): stored when a
// registration or heartbeat brings one, listed and loaded by the script builder, alerts and reports.
import type { Sql } from "../platform/database";
import { jsonTextsParam } from "../platform/database";
import type { AnnouncedSchema } from "./validation";

/** A product some approved device announced a schema for. */
export interface SchemaProduct {
  product: string;
  /** How many different schemas (script sets) its approved devices announce. */
  variants: number;
  devices: number;
}

/** One schema the approved devices of a product announce, and how many devices announce it. */
export interface ProductSchema {
  schema: Record<string, unknown>;
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

/**
 * A schema's version as the device page shows it: its `version` ("v1" when it has none), for the agent
 * a fingerprint of the installed script set; null for no schema ({}). Nothing is keyed by it.
 */
export function schemaVersionOf(schema: Record<string, unknown>): string | null {
  if (Object.keys(schema).length === 0) return null;
  return typeof schema.version === "string" && schema.version !== "" ? schema.version : "v1";
}

// Only approved devices' schemas count: anyone may register a pending device with any schema
// (docs/security.md), and what a stranger announces must not change what operators see.

/** Every product some approved device announced a schema for, sorted. */
export async function listSchemaProducts(sql: Sql): Promise<SchemaProduct[]> {
  return sql<SchemaProduct[]>`
    select s.schema->>'product' as product, count(distinct s.hash)::int as variants, count(*)::int as devices
    from devices d join telemetry_schemas s on s.hash = d.schema_hash
    where d.approval_status = 'approved' and coalesce(s.schema->>'product', '') <> ''
    group by 1 order by 1`;
}

/**
 * The distinct schemas the approved devices of a product (null: of every product) announce now, with
 * how many devices announce each (empty: none). Devices with different script sets announce different
 * schemas; the builders take the union of their fields.
 */
export async function productSchemas(sql: Sql, product: string | null): Promise<ProductSchema[]> {
  return sql<ProductSchema[]>`
    select s.schema, count(*)::int as devices
    from devices d join telemetry_schemas s on s.hash = d.schema_hash
    where d.approval_status = 'approved' and ${
      product === null
        ? sql`coalesce(s.schema->>'product', '') <> ''`
        : sql`s.schema->>'product' = ${product}`
    }
    group by s.hash order by s.hash`;
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
