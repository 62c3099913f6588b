// Telemetry schemas are stored once per content in telemetry_schemas, the device row holding only the
// hash (migration 0021): registration and listing through the real API, the prune job's rule, the
// foreign key, and the upgrade of a database whose devices still carry their schema inline.
import { describe, expect, test } from "bun:test";
import { approveDevices, listSchemaProducts, pruneTelemetrySchemas } from "../../modules/devices/service";
import { applyMigrations } from "../../modules/platform/database";
import { startTestApp } from "../helpers/app";
import { createTestDatabase } from "../helpers/database";
import { register, schemaOf } from "./helpers";

const app = await startTestApp();
const sql = app.database.sql;

const schemaFor = (product: string) => ({
  product,
  version: "v3",
  type: "object",
  properties: { "tëmp ✓": { type: "number", description: "line one\r\nline two" } },
});

describe("telemetry schemas by hash", () => {
  test("devices announcing one schema share one row; each device shows it; the listing counts approved devices", async () => {
    const schema = schemaFor("shared-ü");
    const devices = await Promise.all([1, 2, 3].map(() => register(app, { schema_definition: schema })));
    expect(devices.map((d) => d.response.status)).toEqual([201, 201, 201]);
    for (const device of devices) {
      expect(device.body.data.schema).toEqual(schema);
      expect(device.body.data.schema_version).toBe("v3");
      expect(await schemaOf(app, device.body.data.id)).toEqual(schema);
    }
    const [{ n }] = await sql<{ n: number }[]>`
      select count(*)::int as n from telemetry_schemas where schema->>'product' = 'shared-ü'`;
    expect(n).toBe(1);
    // Pending devices' schemas do not count (anyone can register one); approved ones do.
    expect((await listSchemaProducts(sql)).find((s) => s.product === "shared-ü")).toBeUndefined();
    await approveDevices(sql, [devices[0]!.body.data.id, devices[1]!.body.data.id]);
    const listed = (await listSchemaProducts(sql)).find((s) => s.product === "shared-ü");
    expect(listed).toEqual({ product: "shared-ü", variants: 1, devices: 2 });
    // A device without a schema shows none.
    const bare = await register(app);
    expect(bare.body.data.schema).toEqual({});
    expect(bare.body.data.schema_version).toBeNull();
  });

  test("announcing a known schema neither writes nor waits for its row (a fleet re-registering at once)", async () => {
    const schema = schemaFor("busy");
    await register(app, { schema_definition: schema });
    const held = await sql.reserve();
    await held`begin`;
    // The lock another registration's write of the row would hold (the devices' foreign key checks
    // only share-lock its key, which this lock allows).
    await held`select 1 from telemetry_schemas where schema->>'product' = 'busy' for no key update`;
    try {
      const answered = await Promise.race([
        register(app, { schema_definition: schema }),
        Bun.sleep(5000).then(() => undefined),
      ]);
      expect(answered?.response.status).toBe(201);
    } finally {
      await held`rollback`;
      held.release();
    }
  });

  test("a schema a device has cannot be deleted (foreign key)", async () => {
    const device = await register(app, { schema_definition: schemaFor("kept-by-key") });
    const [{ hash }] = await sql<{ hash: string }[]>`
      select schema_hash as hash from devices where id = ${device.body.data.id}`;
    await expect(sql`delete from telemetry_schemas where hash = ${hash}`).rejects.toThrow(/foreign key/);
  });

  test("the prune deletes schemas no device has and nobody announced within the retention, only those", async () => {
    const used = await register(app, { schema_definition: schemaFor("prune-used") });
    const left = await register(app, { schema_definition: schemaFor("prune-left") });
    // The second device moves on to another schema: the first one is left behind.
    await register(app, {
      mac_address: left.body.data.mac_address,
      schema_definition: schemaFor("prune-new"),
    });
    await sql`insert into telemetry_schemas (hash, schema, announced_at)
      values ('prune-recent', '{"product":"prune-recent"}', now())`;
    await sql`update telemetry_schemas set announced_at = now() - interval '2 days'
      where schema->>'product' in ('prune-used', 'prune-left', 'prune-new')`;
    expect(await pruneTelemetrySchemas(sql, 86_400)).toBeGreaterThanOrEqual(1);
    const products = (
      await sql<{ product: string }[]>`
      select schema->>'product' as product from telemetry_schemas where schema->>'product' like 'prune-%'
      order by 1`
    ).map((r) => r.product);
    expect(products).toEqual(["prune-new", "prune-recent", "prune-used"]);
    expect(await schemaOf(app, used.body.data.id)).toEqual(schemaFor("prune-used"));

    // Announced again, an unused schema's clock restarts: the prune keeps it a day more.
    const mover = await register(app, { schema_definition: schemaFor("prune-again") });
    const moveTo = (product: string) =>
      register(app, { mac_address: mover.body.data.mac_address, schema_definition: schemaFor(product) });
    await moveTo("prune-x");
    await sql`update telemetry_schemas set announced_at = now() - interval '2 days'
      where schema->>'product' = 'prune-again' or hash = 'prune-recent'`;
    await moveTo("prune-again");
    await moveTo("prune-x"); // prune-again is unused again, but was announced just now
    await pruneTelemetrySchemas(sql, 86_400);
    const kept = await sql<{ product: string }[]>`
      select schema->>'product' as product from telemetry_schemas
      where schema->>'product' in ('prune-again', 'prune-recent')`;
    expect(kept.map((r) => r.product)).toEqual(["prune-again"]);
  });
});

describe("the upgrade (migration 0021)", () => {
  test("moves each device's inline schema to telemetry_schemas once per hash, keeping every device's", async () => {
    // A database migrated up to 0020, the devices' schemas inline, then the real migrations.
    const database = await createTestDatabase({ migratedThrough: 20, dropAfterAll: false });
    try {
      const schema = schemaFor("upgraded");
      const text = JSON.stringify(schema);
      await database.sql`
        insert into devices (mac_address, schema, schema_hash, updated_at) values
          ('02:00:00:00:00:01', ${text}::jsonb, 'h1', now() - interval '1 day'),
          ('02:00:00:00:00:02', ${text}::jsonb, 'h1', now()),
          ('02:00:00:00:00:03', '{}', null, now()),
          ('02:00:00:00:00:04', '{}', 'h-without-schema', now())`;
      await applyMigrations(database);

      const stored = await database.sql<{ hash: string; schema: unknown }[]>`
        select hash, schema from telemetry_schemas order by hash`;
      expect([...stored]).toEqual([{ hash: "h1", schema }]);
      const hashes = await database.sql<{ mac_address: string; schema_hash: string | null }[]>`
        select mac_address, schema_hash from devices order by mac_address`;
      expect(hashes.map((d) => d.schema_hash)).toEqual(["h1", "h1", null, null]);
      const columns = await database.sql`
        select 1 from information_schema.columns where table_name = 'devices' and column_name = 'schema'`;
      expect(columns).toHaveLength(0);
    } finally {
      await database.drop();
    }
  });
});
