// Migration 0036 (rule and report scopes): rules saved before scopes keep their meaning — a device
// list becomes the devices scope, none the product scope — and old reports read their product (or the
// whole fleet) through `scopeOf`, with nothing rewritten.
import { describe, expect, test } from "bun:test";
import { getRule } from "../../modules/alerts/rules";
import { applyMigrations } from "../../modules/platform/database";
import { getReport } from "../../modules/reports/definitions";
import { scopeOf } from "../../modules/reports/model";
import { createTestDatabase } from "../helpers/database";

describe("the upgrade to scopes", () => {
  test("a rule with a device list is a devices scope, one without a product scope; reports keep their product", async () => {
    const database = await createTestDatabase({ migratedThrough: 33, dropAfterAll: false });
    const sql = database.sql;
    try {
      const listed = "0193a1b2-0000-7000-8000-000000000001";
      const [withList] = await sql<{ id: number }[]>`
        insert into alert_rules (name, product_name, condition_field, field_type, operator, threshold_value, device_ids)
        values ('Listed', 'atom', 'cpu.usage_pct', 'number', '>', '90', ${[listed]}::uuid[]) returning id`;
      const [withoutList] = await sql<{ id: number }[]>`
        insert into alert_rules (name, product_name, condition_field, field_type, operator, threshold_value)
        values ('Product', 'atom', 'cpu.usage_pct', 'number', '>', '90') returning id`;
      const config = (schema_id: string | null) => ({
        source: "telemetry",
        schema_id,
        fields: [{ path: "cpu.usage_pct", alias: "cpu" }],
        filters: [],
        range: { preset: "24h" },
        mode: "raw",
        bucket: "1h",
      });
      const [atom] = await sql<{ id: string }[]>`insert into custom_reports (name, config)
        values ('Atom', ${JSON.stringify(config("atom"))}::jsonb) returning id`;
      const [all] = await sql<{ id: string }[]>`insert into custom_reports (name, config)
        values ('All', ${JSON.stringify(config(null))}::jsonb) returning id`;

      await applyMigrations(database);

      expect(await getRule(sql, withList!.id)).toMatchObject({ scopeType: "devices", deviceIds: [listed] });
      expect(await getRule(sql, withoutList!.id)).toMatchObject({ scopeType: "product", deviceIds: null });
      expect(scopeOf((await getReport(sql, atom!.id))!.config)).toEqual({ type: "product" });
      expect(scopeOf((await getReport(sql, all!.id))!.config)).toEqual({ type: "fleet" });
    } finally {
      await database.drop();
    }
  });
});
