// Issue 41.3: anyone can register a device, with any schema. A pending registration claiming a
// product's schema (same product and version, conflicting types, fields missing) changes nothing that
// operators see; once an operator approves such a device, the disagreement is shown as a conflict on
// the field, and nothing breaks.
import { describe, expect, test } from "bun:test";
import { approveDevices } from "../../modules/devices/service";
import { approvedDevice, register } from "../devices/helpers";
import { announcedSchema } from "../helpers/agent-schema";
import { startTestApp } from "../helpers/app";

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

const app = await startTestApp();
const token = await app.token("operator");
const product = "sensor";
const schema = announcedSchema(app.config.dataDir, product, [], { builtins: true });
await approvedDevice(app, { product_name: product, schema_definition: schema });

async function call(method: string, path: string, body?: unknown, type = "application/json") {
  const response = await app.fetch(path, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": type },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}
const options = (version: string) =>
  call("GET", `/api/v1/builder-schemas/${product}/versions/${version}/options?builder=alert`);
const rule = (attributes: Record<string, unknown>, id?: string) =>
  call(
    id ? "PATCH" : "POST",
    `/api/json/alert_rules${id ? `/${id}` : ""}`,
    { data: { type: "alert_rule", ...(id ? { id } : {}), attributes } },
    "application/vnd.api+json",
  );
const rulesPage = async () =>
  (
    await app.fetch("/alerts?tab=rules", { headers: { cookie: (await app.session("viewer")).cookie } })
  ).text();
const report = (name: string) =>
  call("POST", "/api/v1/reports", {
    name,
    config: { schema_id: product, schema_version: schema.version, fields: [{ path: "cpu.usage_pct" }] },
  });

describe("schemas of devices nobody approved", () => {
  test("an anonymous registration claiming a product's schema changes nothing for operators", async () => {
    const before = await options(schema.version);
    expect(before.status).toBe(200);
    const created = await rule({
      name: "Busy",
      product_name: product,
      condition_field: "cpu.usage_pct",
      operator: ">",
      threshold_value: "90",
    });
    expect(created.status).toBe(201);
    const ruleId = created.body.data.id;

    // The stranger: no token, the product's name and version, the field as text, the rest left out.
    const stranger = await register(app, {
      product_name: product,
      schema_definition: {
        product,
        version: schema.version,
        type: "object",
        properties: { cpu: { type: "object", properties: { usage_pct: { type: "string" } } } },
      },
    });
    expect(stranger.response.status).toBe(201);
    expect(stranger.body.data.api_token).toBeUndefined();

    for (const version of [schema.version, "current"]) {
      const after = await options(version);
      expect({ version, status: after.status, options: after.body.data?.options }).toEqual({
        version,
        status: 200,
        options: before.body.data.options,
      });
    }
    const validated = await call("POST", "/api/v1/builder-configurations/validate", {
      builder: "alert",
      schema_id: product,
      schema_version: schema.version,
      selections: [{ slot_id: "a", selected_key: "cpu.usage_pct" }],
    });
    expect(validated.body).toEqual({ valid: true, issues: [], cleared_slot_ids: [] });
    const cpuReport = await report("CPU");
    expect(cpuReport.status).toBe(201);
    const read = await call("GET", `/api/json/alert_rules/${ruleId}`);
    expect(read.body.data.attributes.deprecated).toBe(false);
    expect((await rule({ threshold_value: "95" }, ruleId)).status).toBe(200);
    const page = await rulesPage();
    expect(page).not.toContain("Deprecated");
    expect(page).not.toContain("Type conflict");

    // Approved, the device's schema counts: the field is a conflict, shown; nothing is lost.
    await approveDevices(app.database.sql, [stranger.body.data.id]);
    const conflicted = (await options("current")).body.data.options.find(
      (o: Json) => o.key === "cpu.usage_pct",
    );
    expect(conflicted).toMatchObject({
      value_type: "conflict",
      selectable: false,
      conflict: [
        { type: "number", devices: 1 },
        { type: "string", devices: 1 },
      ],
    });
    const message =
      "Devices of this product declare this field with different types (number on 1 device, string on 1).";
    expect(await rulesPage()).toContain("Type conflict");
    expect(await rulesPage()).toContain(message);
    // The rule keeps the type it was saved with and stays editable; a new rule cannot pick the field.
    const edited = await rule({ threshold_value: "80" }, ruleId);
    expect([edited.status, edited.body.data.attributes.field_type]).toEqual([200, "number"]);
    const edit = await app.fetch(`/alerts/${ruleId}/edit`, {
      headers: { cookie: (await app.session("operator")).cookie },
    });
    const editPage = await edit.text();
    expect(editPage).toContain(message);
    expect(editPage).not.toContain("Editing is disabled");
    // Its operators stay the number ones it was saved with (a text field would offer "contains").
    expect(editPage).not.toContain('value="contains"');
    const refused = await rule({
      name: "Busy again",
      product_name: product,
      condition_field: "cpu.usage_pct",
      operator: ">",
      threshold_value: "90",
    });
    expect([refused.status, refused.body.errors[0].meta.fields]).toEqual([422, { condition_field: message }]);
    // A report shows the field's values as text, and says why.
    expect((await report("CPU as text")).status).toBe(201);
    const detail = await app.fetch(`/reports/${cpuReport.body.data.id}`, {
      headers: { cookie: (await app.session("viewer")).cookie },
    });
    expect(await detail.text()).toContain(`cpu.usage_pct: ${message} Its values are shown as text.`);
  });
});
