// Migration 0027: rules and reports saved against a schema version (the agent's fingerprint of its
// script set, stale after any script change) become rules and reports on their product's fields.
import { describe, expect, test } from "bun:test";
import { getRule, isDeprecated, updateRule } from "../../modules/alerts/rules";
import { applyMigrations } from "../../modules/platform/database";
import { getReport, updateReport } from "../../modules/reports/definitions";
import { tempDir } from "../agent/helpers";
import { announcedSchema, fieldsScript } from "../helpers/agent-schema";
import { createTestDatabase } from "../helpers/database";

describe("the upgrade (migration 0027)", () => {
  test("drops the rules' schema version and the reports' one; both stay valid after the devices' scripts changed", async () => {
    const database = await createTestDatabase({ migratedThrough: 26, dropAfterAll: false });
    const agents = tempDir();
    const sql = database.sql;
    try {
      // Saved when the device ran the built-in scripts; it has installed another one since.
      const saved = announcedSchema(agents.dir, "atom", [], { builtins: true });
      const now = announcedSchema(agents.dir, "atom", [fieldsScript("gauge", { level: "integer" })], {
        builtins: true,
      });
      expect(now.version).not.toBe(saved.version);
      await sql`insert into telemetry_schemas (hash, schema) values ('h-now', ${JSON.stringify(now)}::jsonb)`;
      await sql`insert into devices (mac_address, product_name, approval_status, schema_hash)
        values ('02:00:00:00:25:01', 'atom', 'approved', 'h-now')`;
      const [rule] = await sql<{ id: number }[]>`
        insert into alert_rules (name, product_name, schema_version, condition_field, field_type, operator, threshold_value)
        values ('Busy', 'atom', ${saved.version}, 'cpu.usage_pct', 'number', '>', '90') returning id`;
      const config = {
        source: "telemetry",
        schema_id: "atom",
        schema_version: saved.version,
        fields: [{ path: "cpu.usage_pct", alias: "cpu" }],
        filters: [],
        range: { preset: "24h" },
        mode: "raw",
        bucket: "1h",
      };
      const [report] = await sql<{ id: string }[]>`
        insert into custom_reports (name, config) values ('CPU', ${JSON.stringify(config)}::jsonb) returning id`;

      await applyMigrations(database);

      const columns = await sql`select 1 from information_schema.columns
        where table_name = 'alert_rules' and column_name = 'schema_version'`;
      expect(columns).toHaveLength(0);
      const { schema_version: _, ...kept } = config;
      expect((await getReport(sql, report!.id))?.config as unknown).toEqual(kept);
      const stored = (await getRule(sql, rule!.id))!;
      expect(await isDeprecated(sql, stored)).toBe(false);
      expect((await updateRule(sql, stored.id, { threshold_value: "80" })).thresholdValue).toBe("80");
      expect(await updateReport(sql, report!.id, { name: "CPU", config: kept })).toMatchObject({
        config: kept,
      });
    } finally {
      agents.cleanup();
      await database.drop();
    }
  });
});
